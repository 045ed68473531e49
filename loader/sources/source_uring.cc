// SPDX-License-Identifier: Apache-2.0
// The io_uring source: local files with up to queue_depth reads in flight (submit/reap), for
// the uring:QD:T reader. Short reads and -EAGAIN go back in the queue; O_DIRECT (--direct)
// uses 4 KiB-aligned lengths for whole files, and reads a tail that ends unaligned (the file
// shrank since fstat) buffered, through the ring as well. A failed submit or wait is the
// ring's failure, thrown as stoker::Error; a file that cannot be opened or read is that
// request's error. Synchronous read() is the pread path (used for a slot's replacement samples).
// The source a loader makes opens its ring at once (so that a kernel without io_uring is
// known before any read); its clones open theirs at their first submit, so that the decode
// threads' instances, which only read(), hold no ring.
#include "loader/sources/source.h"
#include "loader/sources/source_uring_testing.h"

#include "common/error.h"

#if STOKER_HAVE_URING
#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <deque>

#include "common/clock.h"

namespace stoker {

namespace {

constexpr size_t kAlign = ReadBuffer::kAlign;

std::atomic<UringCompletionHook> completion_hook{nullptr};

uint64_t round_up(uint64_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

// One request, from open to its last byte, possibly in several submissions.
struct Flight {
  uint64_t tag = 0;
  ReadBuffer* buffer = nullptr;
  int fd = -1;
  uint64_t offset = 0, size = 0, done = 0;
  bool direct = false, whole = true;
  int64_t t0 = 0;
  std::string file;
};

class UringSource final : public Source {
 public:
  UringSource(const SourceOptions& o, uint32_t depth, bool open_ring_now)
      : options_(o), depth_(depth ? depth : 32), pread_(make_pread_source(o)) {
    if (open_ring_now) open_ring();
    flights_.resize(depth_);
    for (size_t i = 0; i < depth_; ++i) free_.push_back(i);
  }
  ~UringSource() override {
    if (!ring_open_) return;  // nothing was ever submitted
    // Reads still in flight write into their buffers: wait for them before the ring goes.
    while (in_ring_ > 0) {
      io_uring_cqe* cqe = nullptr;
      int rc;
      while ((rc = io_uring_wait_cqe(&ring_, &cqe)) == -EINTR) {
      }
      if (rc != 0) break;
      io_uring_cqe_seen(&ring_, cqe);
      --in_ring_;
    }
    for (Flight& f : flights_) {
      if (f.fd >= 0) close(f.fd);
    }
    io_uring_queue_exit(&ring_);
  }

  const char* name() const override { return "uring"; }
  uint32_t capabilities() const override { return kAsync; }
  std::unique_ptr<Source> clone() const override {
    return std::make_unique<UringSource>(options_, static_cast<uint32_t>(depth_), false);
  }
  std::span<const uint8_t> read(const SampleLocation& where, ReadBuffer& buf) override {
    return pread_->read(where, buf);
  }
  size_t queue_depth() const override { return depth_; }

  void submit(const ReadRequest& r) override {
    STOKER_CHECK_MSG(!free_.empty(), "uring source: more than {} reads submitted", depth_);
    if (!ring_open_) open_ring();
    const size_t i = free_.front();
    free_.pop_front();
    Flight& f = flights_[i];
    f = Flight{r.tag,    r.buffer,
               -1,       r.where.offset,
               0,        0,
               false,    r.where.whole_file(),
               now_ns(), std::string(r.where.file)};
    f.direct = options_.direct && r.where.whole_file();
    f.fd = open(f.file.c_str(), O_RDONLY | O_CLOEXEC | (f.direct ? O_DIRECT : 0));
    if (f.fd < 0 && f.direct && errno == EINVAL) {
      // No O_DIRECT for this file (tmpfs, some FUSE; or a directory now): read it buffered,
      // so that it fails, if it does, for the same reason as under every other reader.
      f.direct = false;
      f.fd = open(f.file.c_str(), O_RDONLY | O_CLOEXEC);
    }
    struct stat st {};
    if (f.fd < 0) return finish(i, fmt::format("{}: cannot open: {}", f.file, errno_text(errno)));
    if (fstat(f.fd, &st) != 0)
      return finish(i, fmt::format("{}: cannot stat: {}", f.file, errno_text(errno)));
    if (!S_ISREG(st.st_mode)) {
      return finish(
          i, fmt::format("{}: not a regular file (it was replaced after indexing?)", f.file));
    }
    f.size = r.where.whole_file() ? static_cast<uint64_t>(st.st_size) : r.where.length;
    f.buffer->reserve(round_up(f.size) + kAlign);
    if (f.size == 0) return finish(i, {});
    queue(i);
  }

  size_t reap(std::vector<ReadCompletion>& out, size_t max, int timeout_ms) override {
    flush();
    if (done_.empty() && in_ring_ > 0) {
      io_uring_cqe* cqe = nullptr;
      __kernel_timespec ts{timeout_ms / 1000, (timeout_ms % 1000) * 1'000'000LL};
      int rc;
      do {
        rc = io_uring_wait_cqe_timeout(&ring_, &cqe, timeout_ms < 0 ? nullptr : &ts);
      } while (rc == -EINTR);
      if (rc != 0 && rc != -ETIME) fail("io_uring_wait_cqe: {}", errno_text(-rc));
      unsigned head = 0, seen = 0;
      const UringCompletionHook hook = completion_hook.load(std::memory_order_relaxed);
      io_uring_for_each_cqe(&ring_, head, cqe) {
        const size_t i = static_cast<size_t>(io_uring_cqe_get_data64(cqe));
        const Flight& f = flights_[i];
        on_cqe(i, hook ? hook(f.file, f.offset + f.done, f.direct, cqe->res) : cqe->res);
        ++seen;
      }
      io_uring_cq_advance(&ring_, seen);
      flush();  // short reads queued again
    }
    return take_completions(done_, out, max);
  }

 private:
  void open_ring() {
    const int rc = io_uring_queue_init(static_cast<unsigned>(depth_), &ring_, 0);
    if (rc < 0) fail("io_uring is unavailable here: io_uring_queue_init: {}", errno_text(-rc));
    ring_open_ = true;
  }

  void queue(size_t i) {
    Flight& f = flights_[i];
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    STOKER_CHECK(sqe != nullptr);  // at most depth_ flights, each with one sqe
    uint64_t len = f.size - f.done;
    if (f.direct) len = round_up(len);
    io_uring_prep_read(sqe, f.fd, f.buffer->data() + f.done, static_cast<unsigned>(len),
                       f.offset + f.done);
    io_uring_sqe_set_data64(sqe, i);
    ++queued_;
  }

  // Hands queued reads to the kernel; a failure here is the ring's, not a file's.
  // A transient refusal (nothing taken, -EINTR, -EAGAIN, -EBUSY) is retried: at the next reap
  // while reads are in flight, else here for up to a second, then it is the ring's failure.
  void flush() {
    int idle = 0;
    while (queued_ > 0) {
      const int rc = io_uring_submit(&ring_);
      if (rc > 0) {
        queued_ -= std::min(queued_, static_cast<size_t>(rc));
        in_ring_ += static_cast<size_t>(rc);
        idle = 0;
        continue;
      }
      if (rc != 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
        fail("io_uring_submit ({} reads queued): {}", queued_, errno_text(-rc));
      }
      if (in_ring_ > 0) return;  // completions will free room; retried on the next reap
      if (++idle > 1000) {
        fail("io_uring_submit ({} reads queued): {} for a second with no read in flight", queued_,
             rc == 0 ? "nothing taken" : errno_text(-rc));
      }
      if (rc != -EINTR) usleep(1000);
    }
  }

  void on_cqe(size_t i, int res) {
    --in_ring_;
    Flight& f = flights_[i];
    if (res == -EAGAIN || res == -EINTR) return queue(i);
    if (res < 0) {
      return finish(i, fmt::format("{}: read failed at byte {}: {}", f.file, f.offset + f.done,
                                   errno_text(-res)));
    }
    if (res == 0) {
      if (!f.whole) {
        return finish(i, fmt::format("{}: {} bytes at offset {} expected, the file ends after {} "
                                     "(truncated?)",
                                     f.file, f.size, f.offset, f.done));
      }
      f.size = f.done;  // the file shrank since fstat: take what is there
      return finish(i, {});
    }
    f.done = std::min(f.size, f.done + static_cast<uint64_t>(res));
    if (f.done == f.size) return finish(i, {});
    if (!f.direct || f.done % kAlign == 0) return queue(i);  // short read: ask for the rest
    // O_DIRECT ended unaligned before the size fstat gave (the file shrank, or the kernel
    // cut the read short): the rest cannot be asked for aligned, so it is read buffered,
    // through the ring like any read, with its retries, short reads and errors.
    const int plain = open(f.file.c_str(), O_RDONLY | O_CLOEXEC);
    if (plain < 0) {
      return finish(i, fmt::format("{}: cannot reopen for the unaligned tail: {}", f.file,
                                   errno_text(errno)));
    }
    close(f.fd);
    f.fd = plain;
    f.direct = false;
    queue(i);
  }

  void finish(size_t i, std::string error) {
    Flight& f = flights_[i];
    if (f.fd >= 0) {
      if (options_.evict_after_read) posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
      close(f.fd);
      f.fd = -1;
    }
    done_.push_back({f.tag, error.empty() ? f.done : 0, now_ns() - f.t0, std::move(error)});
    free_.push_back(i);
  }

  SourceOptions options_;
  size_t depth_;
  std::unique_ptr<Source> pread_;
  io_uring ring_{};
  bool ring_open_ = false;
  std::vector<Flight> flights_;
  std::deque<size_t> free_;
  std::deque<ReadCompletion> done_;
  size_t queued_ = 0;   // prepared sqes not yet submitted
  size_t in_ring_ = 0;  // submitted, completion not yet seen
};

}  // namespace

std::unique_ptr<Source> make_uring_source(const SourceOptions& options, uint32_t queue_depth) {
  return std::make_unique<UringSource>(options, queue_depth, true);
}

void set_uring_completion_hook(UringCompletionHook hook) {
  completion_hook.store(hook);
}

}  // namespace stoker

#else  // built without liburing

namespace stoker {

std::unique_ptr<Source> make_uring_source(const SourceOptions&, uint32_t) {
  fail("this build of stoker has no io_uring (liburing was not found at build time)");
}

void set_uring_completion_hook(UringCompletionHook) {}

}  // namespace stoker

#endif
