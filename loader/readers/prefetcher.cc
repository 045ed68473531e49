// SPDX-License-Identifier: Apache-2.0
#include "loader/readers/prefetcher.h"

#include "common/error.h"
#include "loader/readers/sample_pipeline.h"

namespace stoker {

Prefetcher::Prefetcher(LoaderContext& ctx, std::span<Batch> batches,
                       std::function<void(size_t)> start)
    : ctx_(ctx),
      batches_(batches),
      start_(std::move(start)),
      jobs_(batches.size()),
      order_(batches.size()) {}

std::vector<size_t> Prefetcher::claim() {
  std::vector<size_t> claimed;
  const size_t last = ctx_.sampler.batches();
  while (active_ && !fatal_ && next_ < last && order_.can_start(ctx_.config.prefetch)) {
    const size_t i = order_.start();
    begin_batch(ctx_, batches_[i], next_++);
    jobs_[i].remaining = batches_[i].size;
    jobs_[i].done = false;
    jobs_[i].error = nullptr;
    ++running_;
    claimed.push_back(i);
  }
  return claimed;
}

void Prefetcher::start_claimed(std::unique_lock<std::mutex>& lock) {
  const std::vector<size_t> claimed = claim();
  if (claimed.empty()) return;
  lock.unlock();
  for (size_t i : claimed) start_(i);
  lock.lock();
}

void Prefetcher::begin(size_t first) {
  std::unique_lock lock(mu_);
  next_ = first;
  active_ = true;
  start_claimed(lock);
}

Batch& Prefetcher::wait(size_t b, const std::function<std::string(size_t)>& progress) {
  std::unique_lock lock(mu_);
  order_.release_held();
  start_claimed(lock);
  if (fatal_) std::rethrow_exception(fatal_);
  if (order_.empty()) {
    // Nothing in flight and no buffer free: the consumer holds them all. Waiting could only
    // end if another thread released one; a bounded pool says so instead.
    stoker::fail(
        "all {} batch buffers are held by the consumer ({} retained): release a batch before "
        "asking for the next one, or keep more (LoaderConfig::keep)",
        batches_.size(), order_.retained());
  }
  const size_t i = order_.front();
  STOKER_CHECK(batches_[i].number == b);
  wait_for_batch(
      lock, cv_, b, batches_[i].epoch, [&] { return jobs_[i].done || fatal_ != nullptr; },
      [&] { return progress(i); }, ctx_.config.poll);
  if (!jobs_[i].done) std::rethrow_exception(fatal_);
  order_.hand_out();
  if (jobs_[i].error) std::rethrow_exception(jobs_[i].error);
  return batches_[i];
}

void Prefetcher::retain() {
  std::lock_guard lock(mu_);
  order_.retain();
}

void Prefetcher::release(const Batch& batch) {
  std::lock_guard lock(mu_);
  STOKER_CHECK(&batch >= batches_.data() && &batch < batches_.data() + batches_.size());
  order_.release(static_cast<size_t>(&batch - batches_.data()));
}

void Prefetcher::sample_done(size_t i, std::exception_ptr error) {
  Job& job = jobs_[i];
  if (error) {
    std::lock_guard lock(mu_);
    if (!job.error) job.error = error;
  }
  if (--job.remaining != 0) return;
  finish_batch(batches_[i]);
  std::lock_guard lock(mu_);
  job.done = true;
  --running_;
  cv_.notify_all();
}

void Prefetcher::fail(std::exception_ptr error) {
  std::lock_guard lock(mu_);
  if (!fatal_) fatal_ = error;
  cv_.notify_all();
}

bool Prefetcher::failed() const {
  std::lock_guard lock(mu_);
  return fatal_ != nullptr;
}

void Prefetcher::stop(const std::function<void()>& cancel) {
  {
    std::lock_guard lock(mu_);
    active_ = false;
  }
  cancel();
  std::unique_lock lock(mu_);
  // A failed reader may have abandoned samples: it reports none after fail(), so only
  // batches it can still finish are awaited (none once it has failed).
  cv_.wait(lock, [&] { return running_ == 0 || fatal_ != nullptr; });
  order_.reset();
}

}  // namespace stoker
