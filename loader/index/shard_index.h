// SPDX-License-Identifier: Apache-2.0
// The index file of a packed shard dataset (docs/FORMATS.md, "Shard index"): class names,
// the shard files, and per sample the shard, offset and length of its image bytes, its
// label and original path, so any sample is read by offset without scanning a tar.
// Text, tab-separated, one record per line. Writing and parsing only; no I/O of samples.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <string>
#include <vector>

namespace stoker {

struct Index;

inline constexpr const char* kShardIndexName = "stoker-shards.tsv";
inline constexpr const char* kShardIndexMagic = "stoker-shards";

struct ShardIndexFile {
  struct Shard {
    std::string file;  // relative to the index file's directory
    uint64_t bytes = 0;
  };
  std::vector<std::string> classes;  // label -> class name
  std::vector<Shard> shards;
  // Per sample, in the original dataset's order.
  std::vector<uint32_t> shard;
  std::vector<uint64_t> offset;  // of the image bytes (past the tar header) in the shard
  std::vector<uint64_t> length;
  std::vector<uint32_t> label;
  std::vector<char> names;  // original relative paths, NUL-terminated, back to back
  std::vector<uint64_t> name_offset;

  size_t size() const { return label.size(); }
  const char* path(size_t i) const { return names.data() + name_offset[i]; }
  void add(uint32_t shard, uint64_t offset, uint64_t length, uint32_t label,
           const std::string& path);
};

// Writes `file` atomically (temp + rename). Throws naming the file (a full disk, for one);
// a path or class name holding a tab or newline is refused, naming it.
void write_shard_index(const ShardIndexFile& index, const std::string& file);

// Parses and checks (counts, labels and shards in range, byte ranges inside their shard).
// Throws stoker::Error naming file:line and what was expected.
ShardIndexFile read_shard_index(const std::string& file);
// The same from a stream (an index read over NFS, say); `file` names it in errors.
ShardIndexFile parse_shard_index(std::istream& in, const std::string& file);

// A parsed shard index as an Index rooted at `root` (a folder or an nfs:// URL), every
// shard's size checked against the index. `shard_size(file)` gives a shard's current size
// in bytes, or throws stoker::Error naming it; `name` is the index for messages. The one
// conversion behind index_shards (local) and the NFS indexer.
Index index_from_shard_file(ShardIndexFile f, std::string root, const std::string& name,
                            const std::function<uint64_t(const std::string& file)>& shard_size);

// True if `file` starts with the shard index magic (reads a few bytes).
bool is_shard_index(const std::string& file);

}  // namespace stoker
