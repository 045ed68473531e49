// SPDX-License-Identifier: Apache-2.0
// A packed shard dataset as an Index: from its shard index file (loader/shard_index.h),
// samples in the original order with their shard, offset and length, and the original
// relative path as the name (messages say "shard-000003.tar:class_001/img_000002.jpg").
// The shards themselves are only checked for existence and size here, not read.
#include <sys/stat.h>

#include "common/error.h"
#include "loader/index.h"
#include "loader/shard_index.h"

namespace stoker {

Index index_shards(const std::string& index_file) {
  ShardIndexFile f = read_shard_index(index_file);
  Index index;
  const size_t slash = index_file.rfind('/');
  index.root = slash == std::string::npos ? "." : index_file.substr(0, slash);
  index.classes = std::move(f.classes);
  std::string path;
  for (const auto& s : f.shards) {
    join_location(path, index.root, s.file);
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {
      fail("shard dataset {}: shard {}: {} (copy the whole folder, or pack again)", index_file,
           path, errno_text(errno));
    }
    if (static_cast<uint64_t>(st.st_size) != s.bytes) {
      fail("shard dataset {}: shard {} is {} bytes, the index says {} (changed since packing?)",
           index_file, path, st.st_size, s.bytes);
    }
    index.shards.push_back(s.file);
  }
  index.names = std::move(f.names);
  index.name_offset = std::move(f.name_offset);
  index.bytes = std::move(f.length);
  index.label = std::move(f.label);
  index.shard = std::move(f.shard);
  index.offset = std::move(f.offset);
  return index;
}

}  // namespace stoker
