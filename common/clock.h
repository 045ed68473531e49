// SPDX-License-Identifier: Apache-2.0
// Monotonic nanoseconds for stage timings. One clock for every stage so sums add up.
#pragma once

#include <chrono>
#include <cstdint>

namespace stoker {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace stoker
