// SPDX-License-Identifier: Apache-2.0
// Plans built once per shape and kept: the cuDNN frontend's life cycle (a graph is validated,
// planned and its workspace sized once for its shapes, then executed many times on buffers and
// a stream). Keyed by a text that names everything the plan depends on (the op, shapes, dtypes,
// layout, constants baked into it). A shape the library does not support (a builder that
// returns null: the frontend's graphs) is remembered as such, so it is not asked again. Host-side
// only; the GPU backend keeps one across reshapes (a size schedule goes back to a size it planned
// before).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace stoker::gpu {

template <class Plan>
class PlanCache {
 public:
  // The plan for `key`: the cached one, else build()'s (nullptr: not supported), kept either
  // way. build() runs under the cache's lock, once per key; if it throws, nothing is kept.
  std::shared_ptr<Plan> get(const std::string& key,
                            const std::function<std::shared_ptr<Plan>()>& build) {
    std::lock_guard lock(mutex_);
    if (auto it = plans_.find(key); it != plans_.end()) {
      ++hits_;
      return it->second;
    }
    ++builds_;
    std::shared_ptr<Plan> plan = build();
    plans_.emplace(key, plan);
    return plan;
  }
  size_t size() const {
    std::lock_guard lock(mutex_);
    return plans_.size();
  }
  size_t hits() const {
    std::lock_guard lock(mutex_);
    return hits_;
  }
  size_t builds() const {
    std::lock_guard lock(mutex_);
    return builds_;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<Plan>> plans_;
  size_t hits_ = 0, builds_ = 0;
};

}  // namespace stoker::gpu
