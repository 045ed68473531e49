// SPDX-License-Identifier: Apache-2.0
// Builds without libnfs (STOKER_WITH_NFS=OFF, or AUTO without libnfs-dev): an nfs:// dataset
// is refused with the reason, never mistaken for a local path.
#include "common/error.h"
#include "loader/index/index_nfs.h"

namespace stoker {

Index index_nfs(const std::string& url) {
  fail(
      "dataset '{}': this build has no NFS client (rebuild with libnfs: Debian libnfs-dev, "
      "cmake -DSTOKER_WITH_NFS=ON)",
      url);
}

}  // namespace stoker
