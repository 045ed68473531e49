// SPDX-License-Identifier: Apache-2.0
// The prefetching every parallel reader shares: keep `prefetch` batches of the epoch in
// flight in the reader's fixed buffers, count their samples down as they finish (in any
// order), hand batches to the consumer in order, and carry a sample's error, or the reader's
// own failure (a broken ring, a lost server), to the consumer's next(). Readers supply only
// "start filling this buffer" and report each sample done. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "loader/batch.h"
#include "loader/readers/batch_order.h"

namespace stoker {

struct LoaderContext;

class Prefetcher {
 public:
  // `start(i)`: the reader begins filling buffer i (number and size set); it is called by
  // the consumer's thread, in batch order, without the prefetcher's lock held.
  Prefetcher(LoaderContext& ctx, std::span<Batch> batches, std::function<void(size_t)> start);

  // Start batches first, first+1, ... of the sampler's current epoch.
  void begin(size_t first);
  // Blocks until batch b (the next in order) is complete; rethrows its first sample error or
  // the reader's failure. `progress` says how far it got, for the 60 s still-waiting note.
  Batch& wait(size_t b, const std::function<std::string(size_t i)>& progress);
  // The consumer keeps the batch wait() last returned until release() (Reader::retain).
  void retain();
  void release(const Batch& batch);
  // One sample of buffer i is finished or abandoned (`error`: why it failed; the first is
  // kept); the last one completes the batch. Any thread.
  void sample_done(size_t i, std::exception_ptr error = nullptr);
  // The reader cannot go on: every wait from now on rethrows `error`. Any thread.
  void fail(std::exception_ptr error);
  // Starts nothing more and blocks until every started batch has been completed; `cancel`
  // first tells the reader to drop queued work (it must still report those samples done).
  void stop(const std::function<void()>& cancel);
  // Samples of buffer i not yet done.
  size_t remaining(size_t i) const { return jobs_[i].remaining.load(); }
  bool failed() const;

 private:
  struct Job {
    std::atomic<size_t> remaining{0};
    bool done = false;
    std::exception_ptr error;
  };
  // With mu_ held: claims buffers for the next batches; returns which, to start unlocked.
  std::vector<size_t> claim();
  void start_claimed(std::unique_lock<std::mutex>& lock);

  LoaderContext& ctx_;
  std::span<Batch> batches_;
  std::function<void(size_t)> start_;
  std::vector<Job> jobs_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  BatchOrder order_;
  size_t next_ = 0;
  size_t running_ = 0;  // batches started and not complete
  bool active_ = false;
  std::exception_ptr fatal_;
};

}  // namespace stoker
