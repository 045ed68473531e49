// SPDX-License-Identifier: Apache-2.0
// Placeholder for the NFS source (libnfs): replaced by source_nfs.cc in builds that have it.
// Until then an nfs:// dataset is refused with the reason, never misread as a local path.
#include "common/error.h"
#include "loader/sources/source.h"

namespace stoker {

std::unique_ptr<Source> make_nfs_source(const SourceSpec& spec) {
  fail("dataset '{}': nfs:// needs the NFS source (libnfs), which this build does not have",
       spec.root);
}

}  // namespace stoker
