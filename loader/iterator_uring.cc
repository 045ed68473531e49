// SPDX-License-Identifier: Apache-2.0
// uring:QD:T: one submitter thread keeps QD whole-file reads in flight with io_uring; as
// each read completes, its buffer goes to an arena of T decode threads. I/O depth is thus
// decoupled from CPU parallelism, which is what high-latency storage needs. Short reads and
// -EAGAIN are resubmitted; O_DIRECT (--direct) uses 4 KiB-aligned buffers and lengths. A
// sample whose read fails is handed to the ordinary pread path, which reproduces the error
// and applies the --on-error policy. Without io_uring (old kernel, seccomp) it says so once
// and runs as threads:T.
#include "loader/producer.h"

#if STOKER_HAVE_URING
#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "common/error.h"
#include "loader/batch_order.h"
#include "loader/sample_pipeline.h"

namespace stoker {

namespace {

constexpr size_t kAlign = 4096;

struct Buffer {
  uint8_t* data = nullptr;
  size_t capacity = 0;
  void reserve(size_t bytes) {
    if (bytes <= capacity) return;
    std::free(data);
    capacity = (bytes + 65535) / 65536 * 65536;
    data = static_cast<uint8_t*>(std::aligned_alloc(kAlign, capacity));
    if (!data) fail("cannot allocate a {}-byte read buffer", capacity);
  }
  ~Buffer() { std::free(data); }
};

// One sample's read: from open to the last byte, possibly in several submissions.
struct Read {
  size_t pool_i = 0, slot = 0;
  int fd = -1;
  uint64_t size = 0, done = 0;
  size_t buffer = 0;
  int64_t t0 = 0;
  bool failed = false;
};

class UringProducer final : public Producer {
 public:
  UringProducer(LoaderContext& ctx, io_uring ring, int qd, int threads)
      : control_(tbb::global_control::max_allowed_parallelism,
                 std::max<size_t>(threads + 2, tbb::info::default_concurrency())),
        arena_(threads, 0),
        ctx_(ctx),
        ring_(ring),
        qd_(qd),
        pool_(ctx.config.prefetch + 1, ctx.config.sampler.batch_size, ctx.config.output,
              ctx.config.memory),
        workers_([&ctx] { return Worker(ctx.config.decode); }),
        jobs_(pool_.count()),
        buffers_(static_cast<size_t>(qd) + 2 * static_cast<size_t>(threads)),
        reads_(static_cast<size_t>(qd)),
        order_(pool_.count()) {
    for (size_t i = 0; i < buffers_.size(); ++i) free_buffers_.push_back(i);
    for (size_t i = 0; i < reads_.size(); ++i) free_reads_.push_back(i);
    submitter_ = std::thread([this] { submit_loop(); });
  }

  ~UringProducer() override {
    stop();
    {
      std::lock_guard lock(mu_);
      quit_ = true;
    }
    work_cv_.notify_all();
    submitter_.join();
    io_uring_queue_exit(&ring_);
  }

  void begin(size_t first) override {
    std::lock_guard lock(mu_);
    next_submit_ = first;
    submit_batches();
  }

  Batch& wait(size_t b) override {
    std::unique_lock lock(mu_);
    order_.release_held();
    submit_batches();
    STOKER_CHECK(!order_.empty());
    const size_t i = order_.front();
    STOKER_CHECK(pool_[i].number == b);
    wait_for_batch(
        lock, done_cv_, b, pool_[i].epoch, [&] { return jobs_[i].done; },
        [&] {
          return std::to_string(jobs_[i].remaining.load()) + " of " +
                 std::to_string(pool_[i].size) + " samples to go, " +
                 std::to_string(reads_in_flight_.load()) + " reads in flight";
        });
    order_.hand_out();
    if (jobs_[i].error) std::rethrow_exception(jobs_[i].error);
    return pool_[i];
  }

  void stop() override {
    std::unique_lock lock(mu_);
    cancel_ = true;
    // Samples not yet read are dropped here; reads in flight finish and their decode skips.
    std::deque<std::pair<size_t, size_t>> dropped;
    dropped.swap(pending_);
    lock.unlock();
    for (const auto& [pool_i, slot] : dropped) sample_done(pool_i);
    lock.lock();
    done_cv_.wait(lock, [&] { return running_ == 0; });
    order_.reset();
    cancel_ = false;
  }

  size_t pool_bytes() const override { return pool_.bytes(); }

 private:
  struct Job {
    bool done = false;
    std::exception_ptr error;
    std::atomic<size_t> remaining{0};
  };

  // With mu_ held: keep `prefetch` batches in flight, their samples queued for reading.
  void submit_batches() {
    const size_t last = ctx_.sampler.batches();
    bool added = false;
    while (next_submit_ < last && order_.can_start(ctx_.config.prefetch)) {
      const size_t i = order_.start();
      Batch& batch = pool_[i];
      begin_batch(ctx_, batch, next_submit_++);
      jobs_[i].done = false;
      jobs_[i].error = nullptr;
      jobs_[i].remaining = batch.size;
      ++running_;
      for (size_t s = 0; s < batch.size; ++s) pending_.emplace_back(i, s);
      added = true;
    }
    if (added) work_cv_.notify_all();
  }

  // A sample of batch pool_i is finished (or abandoned); the last one completes the batch.
  void sample_done(size_t pool_i) {
    if (--jobs_[pool_i].remaining != 0) return;
    finish_batch(pool_[pool_i]);
    std::lock_guard lock(mu_);
    jobs_[pool_i].done = true;
    --running_;
    done_cv_.notify_all();
  }

  // Starts the read of one queued sample; called by the submitter only.
  void start_read(size_t pool_i, size_t slot, size_t read_i, size_t buffer_i) {
    Read& r = reads_[read_i];
    r = Read{pool_i, slot, -1, 0, 0, buffer_i, now_ns(), false};
    const Batch& batch = pool_[pool_i];
    const size_t pos = ctx_.sampler.batch_begin(batch.number) + slot;
    const uint32_t idx = ctx_.sampler.at(pos % ctx_.sampler.epoch_size());
    path_.assign(ctx_.index.root);
    path_ += '/';
    path_ += ctx_.index.relative_path(idx);
    r.fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC | (ctx_.config.direct ? O_DIRECT : 0));
    struct stat st {};
    if (r.fd < 0 || fstat(r.fd, &st) != 0 || !S_ISREG(st.st_mode) || ctx_.bad.known_bad(idx)) {
      r.failed = true;  // the pread path reports the reason (or skips a known bad file)
      complete(read_i);
      return;
    }
    r.size = static_cast<uint64_t>(st.st_size);
    buffers_[buffer_i].reserve((r.size + kAlign - 1) / kAlign * kAlign + kAlign);
    if (r.size == 0) {
      complete(read_i);
      return;
    }
    queue_read(read_i);
  }

  void queue_read(size_t read_i) {
    Read& r = reads_[read_i];
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    STOKER_CHECK(sqe != nullptr);  // at most qd_ reads are ever in flight
    uint64_t len = r.size - r.done;
    if (ctx_.config.direct) len = (len + kAlign - 1) / kAlign * kAlign;
    io_uring_prep_read(sqe, r.fd, buffers_[r.buffer].data + r.done, static_cast<unsigned>(len),
                       r.done);
    io_uring_sqe_set_data64(sqe, read_i);
    ++reads_in_flight_;
  }

  // A read finished (or failed): hand its buffer to a decode thread.
  void complete(size_t read_i) {
    Read r = reads_[read_i];
    if (r.fd >= 0) {
      if (ctx_.config.evict_after_read) posix_fadvise(r.fd, 0, 0, POSIX_FADV_DONTNEED);
      close(r.fd);
    }
    free_reads_.push_back(read_i);
    const int64_t read_ns = now_ns() - r.t0;
    arena_.enqueue([this, r, read_ns] {
      Job& job = jobs_[r.pool_i];
      if (!cancel_) {
        Batch& batch = pool_[r.pool_i];
        const PreRead pre{{buffers_[r.buffer].data, r.done}, read_ns};
        try {
          load_sample(ctx_, workers_.local(), batch, batch.number, r.slot,
                      r.failed ? nullptr : &pre);
        } catch (...) {
          std::lock_guard lock(mu_);
          if (!job.error) job.error = std::current_exception();
        }
      }
      {
        std::lock_guard lock(mu_);
        free_buffers_.push_back(r.buffer);
      }
      work_cv_.notify_all();
      sample_done(r.pool_i);
    });
  }

  void on_completion(size_t read_i, int res) {
    Read& r = reads_[read_i];
    --reads_in_flight_;
    if (res == -EAGAIN || res == -EINTR) {
      queue_read(read_i);
      return;
    }
    if (res < 0) {
      r.failed = true;
    } else if (res == 0) {
      r.size = r.done;  // the file shrank since fstat: take what is there
    } else {
      r.done += static_cast<uint64_t>(res);
      if (r.done > r.size) r.done = r.size;  // O_DIRECT rounds the length up
    }
    const bool aligned = !ctx_.config.direct || r.done % kAlign == 0;
    if (!r.failed && r.done < r.size && aligned) {
      queue_read(read_i);  // short read: ask for the rest
      return;
    }
    if (!r.failed && r.done < r.size) r.failed = true;  // unaligned O_DIRECT remainder: pread it
    complete(read_i);
  }

  void submit_loop() {
    while (true) {
      {
        std::unique_lock lock(mu_);
        work_cv_.wait(lock, [&] {
          return quit_ || reads_in_flight_ > 0 ||
                 (!pending_.empty() && !free_reads_.empty() && !free_buffers_.empty());
        });
        if (quit_ && reads_in_flight_ == 0) return;
        while (!pending_.empty() && !free_reads_.empty() && !free_buffers_.empty()) {
          const auto [pool_i, slot] = pending_.front();
          pending_.pop_front();
          const size_t read_i = free_reads_.front();
          free_reads_.pop_front();
          const size_t buffer_i = free_buffers_.front();
          free_buffers_.pop_front();
          lock.unlock();
          start_read(pool_i, slot, read_i, buffer_i);
          lock.lock();
        }
      }
      if (reads_in_flight_ == 0) continue;
      const int submitted = io_uring_submit(&ring_);
      if (submitted < 0 && submitted != -EBUSY && submitted != -EAGAIN) {
        std::fprintf(stderr, "stoker: io_uring_submit failed: %s\n", std::strerror(-submitted));
      }
      io_uring_cqe* cqe = nullptr;
      const int rc = io_uring_wait_cqe(&ring_, &cqe);
      if (rc == -EINTR) continue;
      STOKER_CHECK_MSG(rc == 0, "io_uring_wait_cqe: {}", std::strerror(-rc));
      unsigned head = 0, seen = 0;
      std::lock_guard lock(mu_);
      io_uring_for_each_cqe(&ring_, head, cqe) {
        on_completion(static_cast<size_t>(io_uring_cqe_get_data64(cqe)), cqe->res);
        ++seen;
      }
      io_uring_cq_advance(&ring_, seen);
    }
  }

  tbb::global_control control_;
  tbb::task_arena arena_;
  LoaderContext& ctx_;
  io_uring ring_;
  int qd_;
  BatchPool pool_;
  tbb::enumerable_thread_specific<Worker> workers_;
  std::vector<Job> jobs_;
  std::vector<Buffer> buffers_;
  std::vector<Read> reads_;
  std::string path_;  // submitter's scratch

  std::mutex mu_;
  std::condition_variable done_cv_, work_cv_;
  BatchOrder order_;
  std::deque<size_t> free_buffers_;
  std::deque<size_t> free_reads_;                  // the submitter thread only
  std::deque<std::pair<size_t, size_t>> pending_;  // (batch pool index, slot) to read
  std::atomic<size_t> reads_in_flight_{0};         // written by the submitter only
  size_t next_submit_ = 0;
  size_t running_ = 0;  // batches begun and not finished
  std::atomic<bool> cancel_{false};
  bool quit_ = false;
  std::thread submitter_;
};

}  // namespace

std::unique_ptr<Producer> make_uring_producer(LoaderContext& ctx, int queue_depth, int threads) {
  io_uring ring{};
  const int rc = io_uring_queue_init(static_cast<unsigned>(queue_depth), &ring, 0);
  if (rc < 0) {
    static std::once_flag once;
    std::call_once(once, [rc, threads] {
      std::fprintf(stderr,
                   "stoker: io_uring is unavailable here (%s): uring readers fall back to "
                   "pread in %d decode threads\n",
                   std::strerror(-rc), threads);
    });
    return make_threads_producer(ctx, threads);
  }
  return std::make_unique<UringProducer>(ctx, ring, queue_depth, threads);
}

}  // namespace stoker

#else  // built without liburing

#include <cstdio>
#include <mutex>

namespace stoker {

std::unique_ptr<Producer> make_uring_producer(LoaderContext& ctx, int, int threads) {
  static std::once_flag once;
  std::call_once(once, [threads] {
    std::fprintf(stderr,
                 "stoker: built without liburing: uring readers fall back to pread in %d decode "
                 "threads\n",
                 threads);
  });
  return make_threads_producer(ctx, threads);
}

}  // namespace stoker

#endif
