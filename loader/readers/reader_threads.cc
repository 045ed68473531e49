// SPDX-License-Identifier: Apache-2.0
// threads:N: a oneTBB arena of N loader threads keeps `prefetch` batches in flight (the
// Prefetcher), the samples of each batch spread over the threads. Batches finish in any
// order; the consumer waits for the next one in sampler order. Each thread has its own
// Decoder, buffers and source instance.
#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <atomic>

#include "common/error.h"
#include "loader/readers/prefetcher.h"
#include "loader/readers/reader.h"
#include "loader/readers/sample_pipeline.h"

namespace stoker {

namespace {

class ThreadsReader final : public Reader {
 public:
  ThreadsReader(LoaderContext& ctx, int threads)
      // The consumer thread only waits, so the arena needs N threads of its own; TBB's
      // default pool has one fewer than the cores, hence the raised global limit.
      : control_(tbb::global_control::max_allowed_parallelism,
                 std::max<size_t>(threads + 1, tbb::info::default_concurrency())),
        arena_(threads, 0),
        ctx_(ctx),
        pool_(pool_batches(ctx.config), ctx.config.sampler.batch_size, ctx.config.output,
              ctx.config.memory),
        scratch_([&ctx] { return SampleScratch(ctx.config.decode, ctx.source->clone()); }),
        prefetch_(ctx, pool_.all(), [this](size_t i) {
          // enqueue, not execute: execute would block the consumer until an arena slot frees.
          arena_.enqueue([this, i] { run(i); });
        }) {}

  ~ThreadsReader() override { stop(); }

  void begin(size_t first) override { prefetch_.begin(first); }

  Batch& wait(size_t b) override {
    return prefetch_.wait(b, [&](size_t i) {
      return std::to_string(pool_[i].size - prefetch_.remaining(i)) + " of " +
             std::to_string(pool_[i].size) + " samples done";
    });
  }

  void stop() override {
    prefetch_.stop([&] { cancel_ = true; });
    cancel_ = false;
  }

  void retain() override { prefetch_.retain(); }
  void release(const Batch& batch) override { prefetch_.release(batch); }
  size_t pool_bytes() const override { return pool_.bytes(); }

 private:
  void run(size_t i) {
    Batch& batch = pool_[i];
    tbb::parallel_for(
        tbb::blocked_range<size_t>(0, batch.size, 1),
        [&](const tbb::blocked_range<size_t>& r) {
          for (size_t s = r.begin(); s != r.end(); ++s) {
            std::exception_ptr error;
            if (!cancel_) {
              try {
                load_sample(ctx_, scratch_.local(), batch, s);
              } catch (...) {
                error = std::current_exception();
              }
            }
            prefetch_.sample_done(i, error);
          }
        },
        tbb::simple_partitioner());
  }

  tbb::global_control control_;
  tbb::task_arena arena_;
  LoaderContext& ctx_;
  BatchPool pool_;
  tbb::enumerable_thread_specific<SampleScratch> scratch_;
  std::atomic<bool> cancel_{false};
  Prefetcher prefetch_;
};

}  // namespace

std::unique_ptr<Reader> make_threads_reader(LoaderContext& ctx, int threads) {
  return std::make_unique<ThreadsReader>(ctx, threads);
}

}  // namespace stoker
