// SPDX-License-Identifier: Apache-2.0
// uring:QD:T: one submitter thread keeps QD reads in flight through an asynchronous source's
// submit/reap (io_uring for local files; any source declaring kAsync, such as null);
// as each read completes, its buffer goes to an arena of T decode threads. I/O depth is
// thus decoupled from CPU parallelism, which is what high-latency storage needs. A slot's
// first candidate comes from here; replacements of a bad one are read by the decode
// thread's own source instance (SlotChain). A failed submit or wait is the reader's failure,
// rethrown by the consumer's next(). It reads through the source it is given and never
// another: one without kAsync is refused before it is made (iterator.cc), and the fallback
// to threads:T where io_uring is missing is the Iterator's too.
#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "loader/readers/prefetcher.h"
#include "loader/readers/reader.h"
#include "loader/readers/sample_pipeline.h"

namespace stoker {

namespace {

// One read in flight: which slot of which buffer, into which read buffer.
struct Request {
  size_t pool_i = 0, slot = 0, buffer = 0;
};

class UringReader final : public Reader {
 public:
  UringReader(LoaderContext& ctx, std::unique_ptr<Source> source, int threads)
      : control_(tbb::global_control::max_allowed_parallelism,
                 std::max<size_t>(threads + 2, tbb::info::default_concurrency())),
        arena_(threads, 0),
        ctx_(ctx),
        source_(std::move(source)),
        qd_([this] {
          STOKER_CHECK(source_->asynchronous());
          return source_->queue_depth();
        }()),
        pool_(pool_batches(ctx.config), ctx.config.sampler.batch_size, ctx.config.output,
              ctx.config.memory),
        scratch_([&ctx] { return SampleScratch(ctx.config.decode, ctx.source->clone()); }),
        buffers_(qd_ + 2 * static_cast<size_t>(threads)),
        requests_(qd_),
        prefetch_(ctx, pool_.all(), [this](size_t i) { queue_batch(i); }) {
    for (size_t i = 0; i < buffers_.size(); ++i) free_buffers_.push_back(i);
    for (size_t i = 0; i < requests_.size(); ++i) free_requests_.push_back(i);
    submitter_ = std::thread([this] { submitter(); });
  }

  ~UringReader() override {
    stop();
    std::unique_lock lock(mu_);
    quit_ = true;
    cv_.notify_all();
    lock.unlock();
    submitter_.join();
    lock.lock();
    cv_.wait(lock, [&] { return decoding_ == 0; });  // tasks of a failed reader
    // A failed source may still have reads in flight into buffers_: it waits for them as it
    // goes, which must happen before buffers_ (declared after it) are freed.
    source_.reset();
  }

  void begin(size_t first) override { prefetch_.begin(first); }

  Batch& wait(size_t b) override {
    return prefetch_.wait(b, [&](size_t i) {
      return std::to_string(prefetch_.remaining(i)) + " of " + std::to_string(pool_[i].size) +
             " samples to go, " + std::to_string(in_flight_.load()) + " reads in flight";
    });
  }

  void stop() override {
    prefetch_.stop([&] {
      std::deque<std::pair<size_t, size_t>> dropped;
      {
        std::lock_guard lock(mu_);
        cancel_ = true;
        dropped.swap(pending_);
      }
      for (const auto& [pool_i, slot] : dropped) prefetch_.sample_done(pool_i);
    });
    std::lock_guard lock(mu_);
    cancel_ = false;
  }

  void retain() override { prefetch_.retain(); }
  void release(const Batch& batch) override { prefetch_.release(batch); }
  size_t pool_bytes() const override { return pool_.bytes(); }

 private:
  void queue_batch(size_t i) {
    std::lock_guard lock(mu_);
    for (size_t s = 0; s < pool_[i].size; ++s) pending_.emplace_back(i, s);
    cv_.notify_all();
  }

  // Submits what it can, reaps what completed, hands completions to the decode threads.
  void submitter() {
    std::vector<ReadCompletion> done;
    std::string scratch;
    try {
      while (true) {
        {
          std::unique_lock lock(mu_);
          cv_.wait(lock, [&] { return quit_ || in_flight_ > 0 || can_submit(); });
          if (quit_ && in_flight_ == 0) return;
          while (can_submit()) {
            const auto [pool_i, slot] = pending_.front();
            pending_.pop_front();
            const size_t r = free_requests_.front();
            free_requests_.pop_front();
            const size_t buffer = free_buffers_.front();
            free_buffers_.pop_front();
            requests_[r] = {pool_i, slot, buffer};
            const size_t pos = ctx_.sampler.batch_begin(pool_[pool_i].number) + slot;
            const uint32_t idx = ctx_.sampler.at(pos % ctx_.sampler.epoch_size());
            ++in_flight_;
            lock.unlock();
            source_->submit({r, locate_sample(ctx_.index, idx, scratch), &buffers_[buffer]});
            lock.lock();
          }
        }
        done.clear();
        source_->reap(done, qd_, 100);
        for (ReadCompletion& c : done) decode(std::move(c));
      }
    } catch (...) {
      // The source is broken (a failed io_uring_submit or wait): nothing more is read. The
      // consumer's next() rethrows this; batches in flight are abandoned.
      prefetch_.fail(std::current_exception());
      std::lock_guard lock(mu_);
      pending_.clear();
      prefetch_failed_ = true;
    }
  }

  bool can_submit() const {
    return !pending_.empty() && !free_requests_.empty() && !free_buffers_.empty() &&
           !prefetch_failed_;
  }

  void decode(ReadCompletion c) {
    const Request r = requests_[c.tag];
    {
      std::lock_guard lock(mu_);
      free_requests_.push_back(c.tag);
      --in_flight_;
      ++decoding_;
    }
    arena_.enqueue([this, r, c = std::move(c)] {
      std::exception_ptr error;
      bool cancelled;
      {
        std::lock_guard lock(mu_);
        cancelled = cancel_;
      }
      if (!cancelled) {
        const PreRead pre{{buffers_[r.buffer].data(), c.bytes}, c.read_ns, c.error};
        try {
          load_sample(ctx_, scratch_.local(), pool_[r.pool_i], r.slot, &pre);
        } catch (...) {
          error = std::current_exception();
        }
      }
      prefetch_.sample_done(r.pool_i, error);
      std::lock_guard lock(mu_);
      free_buffers_.push_back(r.buffer);
      --decoding_;
      cv_.notify_all();
    });
  }

  tbb::global_control control_;
  tbb::task_arena arena_;
  LoaderContext& ctx_;
  std::unique_ptr<Source> source_;  // the submitter thread's alone
  const size_t qd_;
  BatchPool pool_;
  tbb::enumerable_thread_specific<SampleScratch> scratch_;
  std::vector<ReadBuffer> buffers_;
  std::vector<Request> requests_;  // [qd] indexed by a read's tag

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<size_t> free_buffers_, free_requests_;
  std::deque<std::pair<size_t, size_t>> pending_;  // (batch buffer, slot) to read
  std::atomic<size_t> in_flight_{0};
  size_t decoding_ = 0;  // decode tasks enqueued and not finished
  bool cancel_ = false, quit_ = false, prefetch_failed_ = false;
  Prefetcher prefetch_;
  std::thread submitter_;
};

}  // namespace

std::unique_ptr<Reader> make_uring_reader(LoaderContext& ctx, int threads) {
  return std::make_unique<UringReader>(ctx, ctx.source->clone(), threads);
}

}  // namespace stoker
