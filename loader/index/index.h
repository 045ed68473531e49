// SPDX-License-Identifier: Apache-2.0
// The dataset index: every sample's relative path, size and label, in torchvision's
// ImageFolder order; for packed shards also the shard and byte offset of each sample. Stored as a
// few flat arrays (one string pool, no per-sample heap objects), so ImageNet's 1.28 M entries take
// ~50 bytes each and are shared, never written, by every worker.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loader/sources/source.h"

namespace stoker {

struct Index {
  std::string root;                        // directory the relative paths start from
  std::vector<std::string> classes;        // label -> class name
  std::vector<char> names;                 // relative paths, each NUL-terminated, back to back
  std::vector<uint64_t> name_offset;       // [n] start of sample i's path in `names`
  std::vector<uint64_t> bytes;             // [n] file size when indexed
  std::vector<uint32_t> label;             // [n]
  std::vector<std::string> empty_classes;  // class directories with no image (label kept)
  // Packed shards; all empty for a tree of whole files. A sample's bytes are then bytes[i]
  // at offset[i] of shard file shards[shard[i]] (relative to root), and its relative path
  // is its member name inside the shard, or for `stoker pack`'s shards the original
  // relative path (for messages and list files).
  std::vector<std::string> shards;  // shard id -> file name relative to root
  std::vector<uint32_t> shard;      // [n] shard id of sample i
  std::vector<uint64_t> offset;     // [n] byte offset of sample i's data in its shard

  size_t size() const { return label.size(); }
  std::string_view relative_path(size_t i) const { return {names.data() + name_offset[i]}; }
  bool sharded() const { return !shard.empty(); }
  // The name of sample i in messages: its file, or "<shard file>:<member name>".
  std::string path(size_t i) const;
  uint64_t total_bytes() const;
  // Heap bytes held by the per-sample arrays and the path pool.
  size_t memory_bytes() const;
  void add(std::string_view relative, uint64_t size, uint32_t label);
  // A sample inside shard `shard_id` (shards[shard_id] must exist): member name, bytes at
  // `at` of `size` bytes.
  void add_member(std::string_view member, uint32_t shard_id, uint64_t at, uint64_t size,
                  uint32_t label);
};

// THE place a sample's file name is made: `root` + '/' + `relative` (one '/', whatever
// root ends with; root may be a directory or an nfs:// URL, whose ?args stay last), into `out`.
void join_location(std::string& out, std::string_view root, std::string_view relative);

// Where sample i's bytes are (its file or its shard's byte range); `scratch` holds the
// file name the result points into. Every reader and worker process locates through this
// (or SharedIndexView::locate, which calls join_location the same way).
SampleLocation locate_sample(const Index& index, size_t i, std::string& scratch);

// torchvision's ImageFolder: classes are the sorted sub-directories of `root` (label =
// position), samples are the files with an image extension anywhere below a class
// directory, visited in sorted directory-path order and sorted by name within each.
// Hidden files and directories are skipped. Throws stoker::Error if `root` is missing or
// unreadable, or holds no class directory.
Index index_image_folder(const std::string& root);

// A list file: one "relative/path label" per line ('#' starts a comment). Paths are
// relative to `root` (default: the list file's directory). Throws naming file:line.
Index index_list_file(const std::string& list_file, const std::string& root = "");

// A packed shard dataset from its index file (loader/index/shard_index.h, `stoker pack`): root is
// the index file's directory. Throws naming file:line, or a shard that is missing or whose
// size differs from the index's.
Index index_shards(const std::string& index_file);

// A directory holding a shard index (`stoker-shards.tsv`) or a shard index file is opened as
// packed shards; any other directory is indexed as an ImageFolder, a regular file as a list
// file; an nfs:// URL the same way over NFS (index_nfs.h).
Index open_index(const std::string& path);
// open_index's first check alone (the path exists; an nfs:// URL passes): a command that
// reads several datasets checks them all before it measures the first.
void check_dataset_path(const std::string& path);

// What make_source needs of this dataset: its root, and whether samples are shard ranges;
// queue_depth as SourceSpec's (the reads in flight its reader asks for; 0: the default).
SourceSpec source_spec(const Index& index, const SourceOptions& options, uint32_t queue_depth = 0);
inline std::unique_ptr<Source> make_source(const Index& index, const SourceOptions& options,
                                           uint32_t queue_depth = 0) {
  return make_source(source_spec(index, options, queue_depth));
}

// posix_fadvise(DONTNEED) on every file of the index (its shards, when packed), so the next
// read comes from storage. Returns the number of files that could not be evicted
// (evict_file_from_page_cache, source.h). Local datasets only.
size_t evict_from_page_cache(const Index& index);
// The same for the index's files under `root` instead of index.root: an nfs:// dataset's
// files on the server's side, when the server runs on this machine (server_cold_root).
size_t evict_from_page_cache(const Index& index, std::string_view root);

// For an nfs:// index whose server runs on this machine and exports the URL's path as that
// same local path (scripts/nfs_serve.sh): that local directory, once every file of the index
// was found there with the size the server gave. Throws naming the first file that is not.
std::string server_cold_root(const Index& index);

// torchvision's IMG_EXTENSIONS, case-insensitive.
bool has_image_extension(std::string_view name);

}  // namespace stoker
