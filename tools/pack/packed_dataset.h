// SPDX-License-Identifier: Apache-2.0
// Whether a dataset path is a packed shard dataset (`stoker pack`), by open_index's rule,
// without indexing it: so that an option only shards honour (--shard-order sequential) is
// refused before a command prints or measures anything.
#pragma once

#include <string>

namespace stoker {

// A directory holding stoker-shards.tsv, or a shard index file; nfs:// URLs: true (not
// looked at; the loader decides once it has indexed them).
bool is_packed_dataset(const std::string& path);

}  // namespace stoker
