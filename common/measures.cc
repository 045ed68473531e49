// SPDX-License-Identifier: Apache-2.0
#include "common/measures.h"

#include <fmt/format.h>

#include <algorithm>

namespace stoker {

namespace {

// part / window, 0 over an empty window (a run stopped before its first timed batch).
double share_of(double part, double window) {
  return window > 0 ? part / window : 0.0;
}

}  // namespace

double images_per_s(double images, double seconds) {
  return share_of(images, seconds);
}

double data_wait_share(double wait_s, double window_s) {
  return share_of(wait_s, window_s);
}

double accelerator_utilisation(double compute_s, double window_s) {
  return share_of(compute_s, window_s);
}

double idle_share(double held_s, double window_s) {
  if (window_s <= 0) return 0.0;
  return std::max(0.0, 1.0 - held_s / window_s);
}

double step_compute(double busy_s, double forward_s, double backward_s, double update_s) {
  return busy_s > 0 ? busy_s : forward_s + backward_s + update_s;
}

double gap_remainder(double wall_s, double wait_s, double stage_s, double compute_s) {
  return std::max(0.0, wall_s - wait_s - stage_s - compute_s);
}

int64_t window_open_ns(size_t warmup, int64_t first_asked_ns, int64_t first_arrived_ns) {
  return warmup == 0 ? first_arrived_ns : first_asked_ns;
}

std::string not_enough_data(size_t batches, double seconds, size_t prefetch) {
  const size_t least = std::max(kMinJudgedBatches, kPrefetchMultiple * prefetch);
  if (batches >= least && seconds >= kMinJudgedSeconds) return "";
  return fmt::format(
      "not enough data: {} batch{} over {:.2f} s; a verdict needs at least {} batches and "
      "{:.1f} s (run more: --epochs, --seconds, a larger dataset or a smaller --batch)",
      batches, batches == 1 ? "" : "es", seconds, least, kMinJudgedSeconds);
}

}  // namespace stoker
