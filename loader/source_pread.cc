// SPDX-License-Identifier: Apache-2.0
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tbb/parallel_for.h>

#include <atomic>

#include "common/error.h"
#include "loader/index.h"
#include "loader/source.h"

namespace stoker {

std::span<const uint8_t> read_file(const std::string& path, std::vector<uint8_t>& buf, bool evict) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("{}: cannot open: {}", path, errno_text(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    fail("{}: cannot stat: {}", path, errno_text(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    fail("{}: not a regular file (it was replaced after indexing?)", path);
  }
  size_t want = static_cast<size_t>(st.st_size);
  if (buf.size() < want + 1) buf.resize(want + 1);
  size_t got = 0;
  // Read to end of file rather than trusting the size: one extra byte tells growth apart.
  while (true) {
    if (got == buf.size()) buf.resize(buf.size() * 2);
    const ssize_t n = pread(fd, buf.data() + got, buf.size() - got, static_cast<off_t>(got));
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      close(fd);
      fail("{}: read failed at byte {}: {}", path, got, errno_text(e));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (evict) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  return {buf.data(), got};
}

size_t evict_from_page_cache(const Index& index) {
  std::atomic<size_t> failed{0};
  tbb::parallel_for(size_t{0}, index.size(), [&](size_t i) {
    const int fd = open(index.path(i).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      ++failed;
      return;
    }
    // Dirty pages cannot be dropped: write them back first (cheap when already clean).
    fdatasync(fd);
    if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) ++failed;
    close(fd);
  });
  return failed.load();
}

}  // namespace stoker
