// SPDX-License-Identifier: Apache-2.0
#include "loader/index/index.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <numeric>

#include "common/error.h"
#include "loader/index/index_nfs.h"
#include "loader/index/shard_index.h"
#include "loader/sources/nfs_url.h"

namespace stoker {

SourceSpec source_spec(const Index& index, const SourceOptions& options, uint32_t queue_depth) {
  return {index.root, index.sharded(), options, queue_depth};
}

void join_location(std::string& out, std::string_view root, std::string_view relative) {
  // An nfs:// URL's arguments (?nfsport=...&mountport=...) stay last, after the path.
  const bool nfs = is_nfs_url(root);
  // A list file may name samples by absolute path: those are not under the root.
  if (!nfs && !relative.empty() && relative.front() == '/') {
    out.assign(relative);
    return;
  }
  const size_t args = nfs ? root.find('?') : std::string_view::npos;
  out.assign(root.substr(0, args));
  if (!out.empty() && out.back() != '/') out += '/';
  out += relative;
  if (args != std::string_view::npos) out += root.substr(args);
}

SampleLocation locate_sample(const Index& index, size_t i, std::string& scratch) {
  if (!index.sharded()) {
    join_location(scratch, index.root, index.relative_path(i));
    return {scratch, 0, SampleLocation::kWholeFile};
  }
  join_location(scratch, index.root, index.shards[index.shard[i]]);
  return {scratch, index.offset[i], index.bytes[i]};
}

std::string Index::path(size_t i) const {
  std::string p;
  const SampleLocation where = locate_sample(*this, i, p);
  if (!where.whole_file()) {
    p += ':';
    p += relative_path(i);
  }
  return p;
}

uint64_t Index::total_bytes() const {
  return std::accumulate(bytes.begin(), bytes.end(), uint64_t{0});
}

size_t Index::memory_bytes() const {
  return names.capacity() + name_offset.capacity() * sizeof(uint64_t) +
         bytes.capacity() * sizeof(uint64_t) + label.capacity() * sizeof(uint32_t) +
         shard.capacity() * sizeof(uint32_t) + offset.capacity() * sizeof(uint64_t);
}

void Index::add(std::string_view relative, uint64_t size, uint32_t lab) {
  name_offset.push_back(names.size());
  names.insert(names.end(), relative.begin(), relative.end());
  names.push_back('\0');
  bytes.push_back(size);
  label.push_back(lab);
}

void Index::add_member(std::string_view member, uint32_t shard_id, uint64_t at, uint64_t size,
                       uint32_t lab) {
  STOKER_CHECK(shard_id < shards.size() && shard.size() == label.size());
  add(member, size, lab);
  shard.push_back(shard_id);
  offset.push_back(at);
}

bool has_image_extension(std::string_view name) {
  static constexpr std::array<std::string_view, 9> kExt = {".jpg", ".jpeg", ".png",  ".ppm", ".bmp",
                                                           ".pgm", ".tif",  ".tiff", ".webp"};
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return false;
  const std::string_view ext = name.substr(dot);
  return std::any_of(kExt.begin(), kExt.end(), [&](std::string_view e) {
    return e.size() == ext.size() &&
           std::equal(e.begin(), e.end(), ext.begin(), [](char a, char b) {
             return a == std::tolower(static_cast<unsigned char>(b));
           });
  });
}

namespace {

struct stat stat_dataset(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    fail(
        "dataset '{}': {} (expected an ImageFolder directory or a list file; `stoker gen` "
        "makes a synthetic one)",
        path, errno_text(errno));
  }
  return st;
}

}  // namespace

void check_dataset_path(const std::string& path) {
  if (!is_nfs_url(path)) stat_dataset(path);
}

Index open_index(const std::string& path) {
  if (is_nfs_url(path)) return index_nfs(path);
  const struct stat st = stat_dataset(path);
  if (S_ISDIR(st.st_mode)) {
    std::string shard_index;
    join_location(shard_index, path, kShardIndexName);
    if (access(shard_index.c_str(), F_OK) == 0) return index_shards(shard_index);
    return index_image_folder(path);
  }
  if (is_shard_index(path)) return index_shards(path);
  return index_list_file(path);
}

}  // namespace stoker
