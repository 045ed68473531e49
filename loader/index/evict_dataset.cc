// SPDX-License-Identifier: Apache-2.0
// The cold-cache switch over a dataset: every file of an index (its shards, when packed)
// dropped from the page cache, in parallel. The index knows its files; the source layer
// knows how to evict one (evict_file_from_page_cache).
#include <tbb/parallel_for.h>

#include <atomic>
#include <string>

#include "loader/index/index.h"
#include "loader/sources/source.h"

namespace stoker {

size_t evict_from_page_cache(const Index& index) {
  std::atomic<size_t> failed{0};
  const size_t files = index.sharded() ? index.shards.size() : index.size();
  tbb::parallel_for(size_t{0}, files, [&](size_t i) {
    std::string path;
    join_location(path, index.root,
                  index.sharded() ? std::string_view(index.shards[i]) : index.relative_path(i));
    if (!evict_file_from_page_cache(path)) ++failed;
  });
  return failed.load();
}

}  // namespace stoker
