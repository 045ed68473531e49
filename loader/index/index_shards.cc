// SPDX-License-Identifier: Apache-2.0
// A packed shard dataset as an Index: from its shard index file (loader/index/shard_index.h),
// samples in the original order with their shard, offset and length, and the original
// relative path as the name (messages say "shard-000003.tar:class_001/img_000002.jpg").
// The shards themselves are only checked for existence and size here, not read.
#include <sys/stat.h>

#include "common/error.h"
#include "loader/index/index.h"
#include "loader/index/shard_index.h"

namespace stoker {

Index index_from_shard_file(ShardIndexFile f, std::string root, const std::string& name,
                            const std::function<uint64_t(const std::string& file)>& shard_size) {
  Index index;
  index.root = std::move(root);
  index.classes = std::move(f.classes);
  for (const auto& s : f.shards) {
    const uint64_t bytes = shard_size(s.file);
    if (bytes != s.bytes) {
      std::string where;
      join_location(where, index.root, s.file);
      fail("shard dataset {}: shard {} is {} bytes, the index says {} (changed since packing?)",
           name, where, bytes, s.bytes);
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

Index index_shards(const std::string& index_file) {
  const size_t slash = index_file.rfind('/');
  std::string root = slash == std::string::npos ? "." : index_file.substr(0, slash);
  return index_from_shard_file(
      read_shard_index(index_file), root, index_file, [&](const std::string& file) {
        std::string path;
        join_location(path, root, file);
        struct stat st {};
        if (stat(path.c_str(), &st) != 0) {
          fail("shard dataset {}: shard {}: {} (copy the whole folder, or pack again)", index_file,
               path, errno_text(errno));
        }
        return static_cast<uint64_t>(st.st_size);
      });
}

}  // namespace stoker
