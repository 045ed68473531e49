// SPDX-License-Identifier: Apache-2.0
// The `shards` source (packed shards): a sample is a byte range of a tar shard, read with one pread
// at its offset (no tar parsing: the shard index has the offsets). Shards stay open between reads,
// one descriptor per shard per instance, so a read is one system call. A run of forward reads (the
// sequential shard order) asks the kernel to read the next several MiB ahead in one go, so storage
// sees large sequential reads. Synchronous only; io_uring over shards is the uring source, which
// reads byte ranges too.
#include <fcntl.h>
#include <unistd.h>

#include <unordered_map>

#include "common/error.h"
#include "loader/sources/source.h"

namespace stoker {

namespace {

class ShardsSource final : public Source {
 public:
  explicit ShardsSource(const SourceOptions& o) : options_(o) {}
  ~ShardsSource() override { close_all(); }
  const char* name() const override { return "shards"; }
  uint32_t capabilities() const override { return 0; }
  std::unique_ptr<Source> clone() const override {
    return std::make_unique<ShardsSource>(options_);
  }

  std::span<const uint8_t> read(const SampleLocation& where, ReadBuffer& buf) override {
    if (where.whole_file()) {
      fail("{}: the shards source reads byte ranges of packed shards, not whole files", where.file);
    }
    Open& f = shard(where.file);
    const int fd = f.fd;
    buf.reserve(std::max<uint64_t>(where.length, 1));
    size_t got = 0;
    while (got < where.length) {
      const ssize_t n =
          pread(fd, buf.data() + got, where.length - got, static_cast<off_t>(where.offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        fail("{}: read of {} bytes at offset {} failed: {}", where.file, where.length, where.offset,
             errno_text(errno));
      }
      if (n == 0) {
        fail("{}: {} bytes at offset {} expected, the shard ends after {} (truncated shard?)",
             where.file, where.length, where.offset, where.offset + got);
      }
      got += static_cast<size_t>(n);
    }
    read_ahead(f, where.offset, where.length);
    if (options_.evict_after_read) {
      posix_fadvise(fd, static_cast<off_t>(where.offset), static_cast<off_t>(where.length),
                    POSIX_FADV_DONTNEED);
    }
    return {buf.data(), got};
  }

 private:
  // Bounded so that many shards times many threads stays under the descriptor limit.
  static constexpr size_t kMaxOpen = 64;

  // A forward read within this distance of the previous one continues a sequential run.
  static constexpr uint64_t kRunGap = 1 << 20;
  // How far ahead of a sequential run the kernel is asked to read.
  static constexpr uint64_t kAhead = 8 << 20;

  struct Open {
    int fd = -1;
    uint64_t last_end = 0;   // end of the previous read
    uint64_t ahead_end = 0;  // end of what was last asked to be read ahead
  };

  Open& shard(std::string_view file) {
    key_.assign(file);
    if (auto it = fds_.find(key_); it != fds_.end()) return it->second;
    if (fds_.size() >= kMaxOpen) close_all();  // shards are visited in runs: rarely hit
    const int fd = open(key_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail("{}: cannot open shard: {}", key_, errno_text(errno));
    return fds_.emplace(key_, Open{fd}).first->second;
  }

  // Random reads (the global order) ask for nothing; a forward run gets kAhead bytes
  // requested asynchronously (WILLNEED) each time it nears the end of the last request.
  void read_ahead(Open& f, uint64_t offset, uint64_t length) {
    const bool run = offset >= f.last_end && offset - f.last_end < kRunGap && f.last_end > 0;
    f.last_end = offset + length;
    if (!run || f.last_end + kAhead / 2 < f.ahead_end) return;
    const uint64_t from = std::max(f.ahead_end, f.last_end);
    posix_fadvise(f.fd, static_cast<off_t>(from), static_cast<off_t>(kAhead), POSIX_FADV_WILLNEED);
    f.ahead_end = from + kAhead;
  }

  void close_all() {
    for (const auto& [name, f] : fds_) close(f.fd);
    fds_.clear();
  }

  SourceOptions options_;
  std::unordered_map<std::string, Open> fds_;
  std::string key_;
};

}  // namespace

std::unique_ptr<Source> make_shards_source(const SourceSpec& spec) {
  return std::make_unique<ShardsSource>(spec.options);
}

}  // namespace stoker
