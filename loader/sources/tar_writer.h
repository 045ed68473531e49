// SPDX-License-Identifier: Apache-2.0
// Writes one POSIX ustar archive (what GNU tar, Python's tarfile and WebDataset read) of
// regular-file members, atomically: into `<path>.partial`, renamed to `<path>` by finish().
// Not a general tar library: no directories, links, long names or pax headers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace stoker {

inline constexpr size_t kTarBlock = 512;

// The 512-byte ustar header of a regular file `name` (at most 100 bytes, no prefix split)
// of `size` bytes; mode 0644, owner 0/0, mtime 0, so the same members give the same bytes.
// Throws stoker::Error when the name or size does not fit the format.
void tar_header(std::string_view name, uint64_t size, std::span<uint8_t, kTarBlock> out);

// Bytes a member of `size` bytes takes in the archive: header, data, padding to a block.
inline uint64_t tar_member_bytes(uint64_t size) {
  return kTarBlock + (size + kTarBlock - 1) / kTarBlock * kTarBlock;
}

class TarWriter {
 public:
  // Creates `<path>.partial` (replacing a stale one). Throws naming it.
  explicit TarWriter(std::string path);
  ~TarWriter();  // without finish(): removes the partial file
  TarWriter(const TarWriter&) = delete;
  TarWriter& operator=(const TarWriter&) = delete;

  // Appends a member; returns the offset of its data (just past its header) in the archive.
  // Throws naming the archive (a full disk, for one).
  uint64_t add(std::string_view name, std::span<const uint8_t> data);
  // Archive bytes so far (after finish(): the whole archive).
  uint64_t bytes() const { return offset_; }
  // Writes the two zero blocks that end an archive, syncs, renames into place.
  void finish();
  const std::string& path() const { return path_; }

 private:
  void write(const void* data, size_t n);
  std::string path_, partial_;
  int fd_ = -1;
  uint64_t offset_ = 0;
};

}  // namespace stoker
