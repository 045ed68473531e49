// SPDX-License-Identifier: Apache-2.0
// The pread source: local files, one buffered (or O_DIRECT) read at a time, a whole file or a
// byte range of one. The size of a whole file is taken from fstat at open, not from the
// index, so a file that changed since indexing is read as it is now. Also the cold-cache
// switch: evict a file from the page cache.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/error.h"
#include "loader/sources/source.h"

namespace stoker {

namespace {

// An open descriptor that closes itself.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// Reads until `want` bytes or end of file (want = SIZE_MAX: grow buf until end of file).
template <class Grow>
size_t pread_all(int fd, const std::string& path, uint64_t offset, size_t want, uint8_t*& data,
                 size_t& capacity, Grow grow) {
  size_t got = 0;
  while (got < want) {
    if (got == capacity) grow(got * 2);
    const size_t ask = std::min(capacity - got, want - got);
    const ssize_t n = pread(fd, data + got, ask, static_cast<off_t>(offset + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("{}: read failed at byte {}: {}", path, offset + got, errno_text(errno));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

class PreadSource final : public Source {
 public:
  explicit PreadSource(const SourceOptions& o) : options_(o) {}
  const char* name() const override { return "pread"; }
  uint32_t capabilities() const override { return 0; }
  std::unique_ptr<Source> clone() const override { return std::make_unique<PreadSource>(options_); }

  std::span<const uint8_t> read(const SampleLocation& where, ReadBuffer& buf) override {
    path_.assign(where.file);
    Fd f{open(path_.c_str(), O_RDONLY | O_CLOEXEC)};
    if (f.fd < 0) fail("{}: cannot open: {}", path_, errno_text(errno));
    struct stat st {};
    if (fstat(f.fd, &st) != 0) fail("{}: cannot stat: {}", path_, errno_text(errno));
    if (!S_ISREG(st.st_mode))
      fail("{}: not a regular file (it was replaced after indexing?)", path_);
    size_t got = 0;
    uint8_t* data = nullptr;
    size_t capacity = 0;
    if (where.whole_file()) {
      // One extra byte of room tells a file that grew since fstat apart: read to its end.
      buf.reserve(static_cast<size_t>(st.st_size) + 1);
      data = buf.data();
      capacity = buf.capacity();
      got = pread_all(f.fd, path_, 0, SIZE_MAX, data, capacity, [&](size_t want) {
        ReadBuffer bigger;
        bigger.reserve(want);
        std::memcpy(bigger.data(), data, capacity);
        buf = std::move(bigger);
        data = buf.data();
        capacity = buf.capacity();
      });
    } else {
      buf.reserve(where.length);
      data = buf.data();
      capacity = buf.capacity();
      got = pread_all(f.fd, path_, where.offset, where.length, data, capacity, [](size_t) {});
      if (got != where.length) {
        fail("{}: {} bytes at offset {} expected, the file ends after {} (truncated?)", path_,
             where.length, where.offset, got);
      }
    }
    if (options_.evict_after_read) {
      posix_fadvise(f.fd, static_cast<off_t>(where.offset),
                    where.whole_file() ? 0 : static_cast<off_t>(where.length), POSIX_FADV_DONTNEED);
    }
    return {buf.data(), got};
  }

 private:
  SourceOptions options_;
  std::string path_;  // NUL-terminated copy of the location's file
};

// Whether any page of the open file `fd` (of `size` bytes) is in the page cache: cachestat(2)
// where the kernel has it (6.5+), else mincore(2) over a mapping, which tells the truth only
// to the file's owner or a writer (to anyone else it says "all resident"); where neither
// can tell, false: the eviction is taken on trust.
bool still_cached(int fd, const struct stat& st) {
  if (st.st_size == 0) return false;
#ifndef SYS_cachestat
  constexpr long SYS_cachestat = 451;
#endif
  struct {
    uint64_t off, len;
  } range{0, 0};
  struct {
    uint64_t cache, dirty, writeback, evicted, recently_evicted;
  } cs{};
  if (syscall(SYS_cachestat, fd, &range, &cs, 0) == 0) return cs.cache > 0;
  if (st.st_uid != geteuid() && geteuid() != 0) return false;
  const size_t size = static_cast<size_t>(st.st_size);
  void* m = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) return false;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> pages((size + page - 1) / page);
  bool cached = false;
  if (mincore(m, size, pages.data()) == 0) {
    for (unsigned char p : pages) cached = cached || (p & 1);
  }
  munmap(m, size);
  return cached;
}

}  // namespace

std::unique_ptr<Source> make_pread_source(const SourceOptions& options) {
  return std::make_unique<PreadSource>(options);
}

std::span<const uint8_t> read_file(const std::string& path, std::vector<uint8_t>& buf, bool evict) {
  Fd f{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) fail("{}: cannot open: {}", path, errno_text(errno));
  struct stat st {};
  if (fstat(f.fd, &st) != 0) fail("{}: cannot stat: {}", path, errno_text(errno));
  if (!S_ISREG(st.st_mode)) fail("{}: not a regular file (it was replaced after indexing?)", path);
  if (buf.size() < static_cast<size_t>(st.st_size) + 1) buf.resize(st.st_size + 1);
  uint8_t* data = buf.data();
  size_t capacity = buf.size();
  const size_t got = pread_all(f.fd, path, 0, SIZE_MAX, data, capacity, [&](size_t want) {
    buf.resize(want);
    data = buf.data();
    capacity = buf.size();
  });
  if (evict) posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
  return {buf.data(), got};
}

bool evict_file_from_page_cache(const std::string& path) {
  const Fd f{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return false;
  // Dirty pages cannot be dropped: write them back first (cheap when already clean).
  fdatasync(f.fd);
  struct stat st {};
  // fadvise succeeds on file systems that keep the pages anyway (tmpfs, some FUSE and
  // overlay set-ups): what is still cached afterwards counts as not evicted.
  return posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED) == 0 && fstat(f.fd, &st) == 0 &&
         !still_cached(f.fd, st);
}

}  // namespace stoker
