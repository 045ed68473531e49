// SPDX-License-Identifier: Apache-2.0
// Latency histogram with log-spaced buckets (8 per power of two, ~9% wide): percentiles of
// any number of samples in a fixed 4 KiB, so a run's statistics do not grow with its length.
#pragma once

#include <array>
#include <cstdint>

namespace stoker {

class Histogram {
 public:
  void add(int64_t ns);
  void merge(const Histogram& other);
  uint64_t count() const { return count_; }
  double mean_ns() const { return count_ ? static_cast<double>(sum_) / count_ : 0.0; }
  int64_t max_ns() const { return max_; }
  int64_t sum_ns() const { return sum_; }
  // q in [0, 1]; the upper edge of the bucket holding the q-quantile (max for q = 1).
  double quantile_ns(double q) const;

 private:
  static constexpr int kSub = 8;
  std::array<uint64_t, 64 * kSub> buckets_{};
  uint64_t count_ = 0;
  int64_t sum_ = 0, max_ = 0;
};

}  // namespace stoker
