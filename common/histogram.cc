// SPDX-License-Identifier: Apache-2.0
#include "common/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace stoker {

namespace {

int bucket_of(uint64_t v) {
  if (v < 8) return static_cast<int>(v);     // exact for tiny values
  const int exp = 63 - std::countl_zero(v);  // v in [2^exp, 2^(exp+1))
  const int sub = static_cast<int>((v >> (exp - 3)) & 7);
  return exp * 8 + sub;
}

double upper_edge(int b) {
  if (b < 8) return b;
  const int exp = b / 8, sub = b % 8;
  return std::ldexp(1.0 + (sub + 1) / 8.0, exp);
}

}  // namespace

void Histogram::add(int64_t ns) {
  const uint64_t v = ns < 0 ? 0 : static_cast<uint64_t>(ns);
  ++buckets_[bucket_of(v)];
  ++count_;
  sum_ += static_cast<int64_t>(v);
  max_ = std::max<int64_t>(max_, static_cast<int64_t>(v));
}

void Histogram::merge(const Histogram& o) {
  for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += o.buckets_[i];
  count_ += o.count_;
  sum_ += o.sum_;
  max_ = std::max(max_, o.max_);
}

double Histogram::quantile_ns(double q) const {
  if (count_ == 0) return 0.0;
  if (q >= 1.0) return static_cast<double>(max_);
  const auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  uint64_t seen = 0;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    seen += buckets_[b];
    if (seen >= std::max<uint64_t>(rank, 1)) {
      return std::min(upper_edge(static_cast<int>(b)), static_cast<double>(max_));
    }
  }
  return static_cast<double>(max_);
}

}  // namespace stoker
