// SPDX-License-Identifier: Apache-2.0
// The cold-cache switch over a dataset: every file of an index (its shards, when packed)
// dropped from the page cache, in parallel. The index knows its files; the source layer
// knows how to evict one (evict_file_from_page_cache). A dataset read through an NFS server
// on this machine is evicted from the server's side: its files under the local directory
// the URL names (server_cold_root).
#include <tbb/parallel_for.h>

#include <atomic>
#include <string>

#include <sys/stat.h>

#include "common/error.h"
#include "loader/index/index.h"
#include "loader/sources/nfs_url.h"
#include "loader/sources/source.h"

namespace stoker {

size_t evict_from_page_cache(const Index& index) {
  return evict_from_page_cache(index, index.root);
}

size_t evict_from_page_cache(const Index& index, std::string_view root) {
  std::atomic<size_t> failed{0};
  const size_t files = index.sharded() ? index.shards.size() : index.size();
  tbb::parallel_for(size_t{0}, files, [&](size_t i) {
    std::string path;
    join_location(path, root,
                  index.sharded() ? std::string_view(index.shards[i]) : index.relative_path(i));
    if (!evict_file_from_page_cache(path)) ++failed;
  });
  return failed.load();
}

std::string server_cold_root(const Index& index) {
  const NfsUrl url = parse_nfs_url(index.root);
  // Every file must be there, as large as the server said: else the wrong tree would be
  // evicted and the run called cold on the server when it is not.
  const size_t files = index.sharded() ? index.shards.size() : index.size();
  std::string path;
  for (size_t i = 0; i < files; ++i) {
    const std::string_view rel =
        index.sharded() ? std::string_view(index.shards[i]) : index.relative_path(i);
    join_location(path, url.path, rel);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      fail(
          "--server-cold: {} is not on this machine ({}): the NFS server of {} must run here and "
          "export {} under the same path (as scripts/nfs_serve.sh does)",
          path, errno_text(errno), index.root, url.path);
    if (!index.sharded() && uint64_t(st.st_size) != index.bytes[i])
      fail("--server-cold: {} has {} bytes here but {} through {}: not the file the server exports",
           path, st.st_size, index.bytes[i], index.root);
  }
  return url.path;
}

}  // namespace stoker
