// SPDX-License-Identifier: Apache-2.0
// threads:N: a oneTBB arena of N worker threads keeps `prefetch` batches in flight, the
// samples of each batch spread over the workers. Batches finish in any order; the consumer
// waits for the next one in sampler order. Each worker has its own Decoder and buffers.
#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>

#include "common/error.h"
#include "loader/batch_order.h"
#include "loader/producer.h"
#include "loader/sample_pipeline.h"

namespace stoker {

namespace {

class ThreadsProducer final : public Producer {
 public:
  ThreadsProducer(LoaderContext& ctx, int threads)
      // The consumer thread only waits, so the arena needs N workers of its own; TBB's
      // default pool has one fewer than the cores, hence the raised global limit.
      : control_(tbb::global_control::max_allowed_parallelism,
                 std::max<size_t>(threads + 1, tbb::info::default_concurrency())),
        arena_(threads, 0),
        ctx_(ctx),
        pool_(ctx.config.prefetch + 1, ctx.config.sampler.batch_size, ctx.config.output,
              ctx.config.memory),
        workers_([&ctx] { return Worker(ctx.config.decode); }),
        jobs_(pool_.count()),
        order_(pool_.count()) {}

  ~ThreadsProducer() override { stop(); }

  void begin(size_t first) override {
    std::lock_guard lock(mu_);
    next_submit_ = first;
    submit_more();
  }

  Batch& wait(size_t b) override {
    std::unique_lock lock(mu_);
    order_.release_held();
    submit_more();
    STOKER_CHECK(!order_.empty());
    const size_t i = order_.front();
    STOKER_CHECK(pool_[i].number == b);
    wait_for_batch(
        lock, done_cv_, b, pool_[i].epoch, [&] { return jobs_[i].done; },
        [&] {
          return std::to_string(jobs_[i].samples_done.load()) + " of " +
                 std::to_string(pool_[i].size) + " samples done";
        });
    order_.hand_out();
    if (jobs_[i].error) std::rethrow_exception(jobs_[i].error);
    return pool_[i];
  }

  void stop() override {
    cancel_ = true;
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [&] { return running_ == 0; });
    order_.reset();
    cancel_ = false;
  }

  size_t pool_bytes() const override { return pool_.bytes(); }

 private:
  struct Job {
    bool done = false;
    std::exception_ptr error;
    std::atomic<size_t> samples_done{0};
  };

  // Called with mu_ held.
  void submit_more() {
    const size_t last = ctx_.sampler.batches();
    while (next_submit_ < last && order_.can_start(ctx_.config.prefetch)) {
      const size_t i = order_.start();
      Batch& batch = pool_[i];
      begin_batch(ctx_, batch, next_submit_);
      jobs_[i].done = false;
      jobs_[i].error = nullptr;
      jobs_[i].samples_done = 0;
      ++next_submit_;
      ++running_;
      // enqueue, not execute: execute would block this thread (holding mu_) until an arena
      // slot frees, while the workers that hold the slots wait for mu_ to report completion.
      arena_.enqueue([this, i] { run(i); });
    }
  }

  void run(size_t i) {
    Batch& batch = pool_[i];
    Job& job = jobs_[i];
    std::exception_ptr error;
    std::mutex error_mu;
    tbb::parallel_for(
        tbb::blocked_range<size_t>(0, batch.size, 1),
        [&](const tbb::blocked_range<size_t>& r) {
          for (size_t s = r.begin(); s != r.end(); ++s) {
            if (cancel_) return;
            try {
              load_sample(ctx_, workers_.local(), batch, batch.number, s);
            } catch (...) {
              std::lock_guard lock(error_mu);
              if (!error) error = std::current_exception();
            }
            ++job.samples_done;
          }
        },
        tbb::simple_partitioner());
    finish_batch(batch);
    std::lock_guard lock(mu_);
    job.error = error;
    job.done = true;
    --running_;
    done_cv_.notify_all();
  }

  tbb::global_control control_;
  tbb::task_arena arena_;
  LoaderContext& ctx_;
  BatchPool pool_;
  tbb::enumerable_thread_specific<Worker> workers_;
  std::vector<Job> jobs_;
  std::mutex mu_;
  std::condition_variable done_cv_;
  BatchOrder order_;
  size_t next_submit_ = 0;
  size_t running_ = 0;  // jobs enqueued and not finished
  std::atomic<bool> cancel_{false};
};

}  // namespace

std::unique_ptr<Producer> make_threads_producer(LoaderContext& ctx, int threads) {
  return std::make_unique<ThreadsProducer>(ctx, threads);
}

}  // namespace stoker
