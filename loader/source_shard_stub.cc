// SPDX-License-Identifier: Apache-2.0
// Placeholder for the packed-shard source: replaced by source_shard.cc once it exists. Until
// then a sharded index is refused with the reason.
#include "common/error.h"
#include "loader/source.h"

namespace stoker {

std::unique_ptr<Source> make_shard_source(const SourceSpec& spec) {
  fail("dataset '{}': packed shards need the shard source, which this build does not have",
       spec.root);
}

}  // namespace stoker
