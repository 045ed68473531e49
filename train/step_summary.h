// SPDX-License-Identifier: Apache-2.0
// The timed steps of a training run (from its timing warm-up on, the first steps paying for
// first touches of memory and caches): each phase's seconds per step and their totals, what
// the summary table and the JSON report. Not the per-size costs (tools/train_sizes.h).
#pragma once

#include <cstddef>
#include <vector>

#include "train/train_loop.h"

namespace stoker {

struct StepSummary {
  size_t skipped = 0;  // warm-up steps left out: min(timing_warmup, steps - 1)
  // Seconds per timed step, in step order.
  std::vector<double> wait, stage, forward, backward, update, total;
  // Their sums over the timed steps.
  double wall = 0, wait_s = 0, stage_s = 0, forward_s = 0, backward_s = 0, update_s = 0;
};

// `records` must not be empty (the loop runs at least one step).
StepSummary summarise_steps(const std::vector<StepRecord>& records, size_t timing_warmup);

}  // namespace stoker
