// SPDX-License-Identifier: Apache-2.0
#include "loader/sources/tar_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstring>

#include "common/error.h"

namespace stoker {

namespace {

// An octal number right-aligned in `width - 1` digits plus a NUL, as ustar numeric fields are.
bool put_octal(uint8_t* field, size_t width, uint64_t value) {
  field[width - 1] = '\0';
  for (size_t i = width - 1; i-- > 0;) {
    field[i] = static_cast<uint8_t>('0' + (value & 7));
    value >>= 3;
  }
  return value == 0;
}

}  // namespace

void tar_header(std::string_view name, uint64_t size, std::span<uint8_t, kTarBlock> h) {
  if (name.empty() || name.size() > 100) {
    fail("tar member name '{}' is {} bytes (ustar holds 1 to 100)", name, name.size());
  }
  std::memset(h.data(), 0, kTarBlock);
  std::memcpy(h.data(), name.data(), name.size());  // name[100] at 0
  put_octal(h.data() + 100, 8, 0644);               // mode
  put_octal(h.data() + 108, 8, 0);                  // uid
  put_octal(h.data() + 116, 8, 0);                  // gid
  if (!put_octal(h.data() + 124, 12, size)) {       // size: 11 octal digits, under 8 GiB
    fail("tar member '{}' is {} bytes; ustar holds at most 8 GiB - 1", name, size);
  }
  put_octal(h.data() + 136, 12, 0);         // mtime: fixed, so packing twice gives the same bytes
  h[156] = '0';                             // typeflag: regular file
  std::memcpy(h.data() + 257, "ustar", 6);  // magic "ustar\0"
  std::memcpy(h.data() + 263, "00", 2);     // version
  // The checksum is the byte sum with its own field read as eight spaces; written as six
  // octal digits, a NUL and a space (what GNU tar writes).
  std::memset(h.data() + 148, ' ', 8);
  uint32_t sum = 0;
  for (uint8_t b : h) sum += b;
  put_octal(h.data() + 148, 7, sum);
  h[155] = ' ';
}

TarWriter::TarWriter(std::string path) : path_(std::move(path)), partial_(path_ + ".partial") {
  fd_ = open(partial_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("shard {}: cannot create: {}", partial_, errno_text(errno));
}

TarWriter::~TarWriter() {
  if (fd_ >= 0) {
    close(fd_);
    unlink(partial_.c_str());
  }
}

void TarWriter::write(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      fail("shard {}: write failed at byte {}: {}", partial_, offset_,
           w < 0 ? errno_text(errno) : std::string("no progress"));
    }
    p += w;
    n -= static_cast<size_t>(w);
    offset_ += static_cast<uint64_t>(w);
  }
}

uint64_t TarWriter::add(std::string_view name, std::span<const uint8_t> data) {
  STOKER_CHECK(fd_ >= 0);
  std::array<uint8_t, kTarBlock> header{};
  tar_header(name, data.size(), header);
  write(header.data(), header.size());
  const uint64_t data_offset = offset_;
  write(data.data(), data.size());
  static constexpr std::array<uint8_t, kTarBlock> kZero{};
  const size_t pad = (kTarBlock - data.size() % kTarBlock) % kTarBlock;
  write(kZero.data(), pad);
  return data_offset;
}

void TarWriter::finish() {
  STOKER_CHECK(fd_ >= 0);
  static constexpr std::array<uint8_t, 2 * kTarBlock> kEnd{};
  write(kEnd.data(), kEnd.size());
  if (fsync(fd_) != 0) fail("shard {}: fsync failed: {}", partial_, errno_text(errno));
  if (close(fd_) != 0) {
    fd_ = -1;
    unlink(partial_.c_str());
    fail("shard {}: close failed: {}", partial_, errno_text(errno));
  }
  fd_ = -1;
  if (rename(partial_.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    unlink(partial_.c_str());
    fail("shard {}: cannot rename into place: {}", path_, errno_text(e));
  }
}

}  // namespace stoker
