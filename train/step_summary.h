// SPDX-License-Identifier: Apache-2.0
// The timed steps of a training run (from its timing warm-up on, the first steps paying for
// first touches of memory and caches): each phase's seconds per step and their totals, and
// each step's account on the compute engine's timeline (step_account.h), what the summary
// table and the JSON report. Not the per-size costs (tools/train/train_sizes.h).
#pragma once

#include <cstddef>
#include <vector>

#include "train/step_account.h"
#include "train/train_loop.h"

namespace stoker {

struct StepSummary {
  size_t skipped = 0;  // warm-up steps left out: min(warmup, steps - 1)
  // Seconds per timed step, in step order (the loop's host figures and the backend's).
  std::vector<double> wait, stage, forward, backward, update, total;
  std::vector<StepAccount> account;  // per timed step
  // Their sums over the timed steps. `wall`: the engine's (the accounts' walls: on a device
  // its own time, which rates come from); `host_wall`: the loop's (on a device that runs
  // ahead of its host, the host's enqueue time).
  double wall = 0, host_wall = 0, wait_s = 0, stage_s = 0, forward_s = 0, backward_s = 0,
         update_s = 0;
  StepAccount account_total;  // the accounts' terms summed
  size_t unbalanced = 0;      // timed steps whose account is off by more than its tolerance
};

// `records` must not be empty (the loop runs at least one step). `asynchronous` and
// `activity`: as account_step takes them (LoopResult::asynchronous, LoopConfig::activity).
StepSummary summarise_steps(const std::vector<StepRecord>& records, size_t warmup,
                            bool asynchronous = false, bool activity = false);

}  // namespace stoker
