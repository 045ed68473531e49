// SPDX-License-Identifier: Apache-2.0
// The bookkeeping every prefetching reader shares: which pool buffers are free, which are in
// flight (in batch order), which one the consumer holds; and the consumer's bounded wait for
// the next one. Not thread-safe by itself: callers hold their own mutex around every call.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/error.h"
#include "common/log.h"

namespace stoker {

class BatchOrder {
 public:
  explicit BatchOrder(size_t pool_size) {
    for (size_t i = 0; i < pool_size; ++i) free_.push_back(i);
  }
  // The consumer is done with the buffer it held (it asked for the next batch).
  void release_held() {
    if (held_ >= 0) free_.push_back(static_cast<size_t>(held_));
    held_ = -1;
  }
  // The consumer keeps the buffer it holds past its next request, until release(i).
  void retain() {
    if (held_ >= 0) kept_.push_back(static_cast<size_t>(held_));
    held_ = -1;
  }
  // Retained buffer i is free again.
  void release(size_t i) {
    const auto it = std::find(kept_.begin(), kept_.end(), i);
    STOKER_CHECK_MSG(it != kept_.end(), "buffer {} released but not retained", i);
    kept_.erase(it);
    free_.push_back(i);
  }
  size_t retained() const { return kept_.size(); }
  bool can_start(size_t prefetch) const { return !free_.empty() && in_flight_.size() < prefetch; }
  // Takes a free buffer for the next batch in order.
  size_t start() {
    const size_t i = free_.front();
    free_.pop_front();
    in_flight_.push_back(i);
    return i;
  }
  bool empty() const { return in_flight_.empty(); }
  size_t front() const { return in_flight_.front(); }
  // The front batch goes to the consumer, who holds it until release_held().
  void hand_out() {
    held_ = static_cast<int>(in_flight_.front());
    in_flight_.pop_front();
  }
  // After a stop: every buffer but the retained ones is free again.
  void reset() {
    for (size_t i : in_flight_) free_.push_back(i);
    in_flight_.clear();
    release_held();
  }
  const std::deque<size_t>& in_flight() const { return in_flight_; }

 private:
  std::deque<size_t> free_, in_flight_;
  std::vector<size_t> kept_;  // retained by the consumer
  int held_ = -1;
};

// Waits on `cv` (with `lock` held) until done(). Never silently forever: every 60 s it says
// which batch it is waiting for and, from progress(), how far that batch has got. With a
// `poll` (LoaderConfig::poll), calls it unlocked every 50 ms; what it throws ends the wait.
template <class Done, class Progress>
void wait_for_batch(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, size_t batch,
                    uint64_t epoch, Done done, Progress progress,
                    const std::function<void()>& poll = {}) {
  using std::chrono::steady_clock;
  const auto slice = poll ? std::chrono::milliseconds(50) : std::chrono::milliseconds(60'000);
  auto note_at = steady_clock::now() + std::chrono::seconds(60);
  for (int waited_s = 60; !cv.wait_for(lock, slice, done);) {
    if (poll) {
      lock.unlock();
      poll();
      lock.lock();
      if (steady_clock::now() < note_at) continue;
    }
    note_at += std::chrono::seconds(60);
    const std::string detail = progress();
    log_note(
        fmt::format("still waiting for batch {} of epoch {} after {} s ({}; slow storage "
                    "or a stuck read?)",
                    batch, epoch, waited_s, detail));
    waited_s += 60;
  }
}

}  // namespace stoker
