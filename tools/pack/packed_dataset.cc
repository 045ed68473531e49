// SPDX-License-Identifier: Apache-2.0
#include "tools/pack/packed_dataset.h"

#include <sys/stat.h>
#include <unistd.h>

#include "loader/index/index.h"
#include "loader/index/shard_index.h"
#include "loader/sources/nfs_url.h"

namespace stoker {

bool is_packed_dataset(const std::string& path) {
  if (is_nfs_url(path)) return true;
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return false;
  if (!S_ISDIR(st.st_mode)) return is_shard_index(path);
  std::string index;
  join_location(index, path, kShardIndexName);
  return access(index.c_str(), F_OK) == 0;
}

}  // namespace stoker
