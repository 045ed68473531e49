// SPDX-License-Identifier: Apache-2.0
// Where one step's time went, on the compute engine's own timeline: wait + stage + compute +
// gaps = wall. The terms come from two independent sources, so the sum is a check, not a
// definition: the engine's activity records split the step's window into busy time and idle
// time (idle during the loop's data waits = wait, the rest = gaps), and the backend's own
// timers (events on a GPU's stream, the clock around the work on a CPU) give stage and
// compute, which must then cover the busy time. Not the summary of a run (step_summary.h).
#pragma once

#include "train/train_loop.h"

namespace stoker {

struct StepAccount {
  // Seconds. `wall`: the step's window on the engine's timeline (a CPU: the loop's host
  // window; a device: its own records' window, else its own clock, else the host's).
  double wall = 0, wait = 0, stage = 0, compute = 0, gaps = 0;
  // Where `wall` came from: the host's window, the device's activity records, the device's
  // own clock (StepTimes::wall), or the host's window for a device (its enqueue time, which
  // says nothing of the device: only when neither record nor clock is there).
  enum class WallFrom {
    host,
    device_records,
    device_clock,
    host_for_device
  } wall_from = WallFrom::host;
  // Whether wait and gaps were measured (activity records); without them gaps is what is
  // left of wall once wait, stage and compute are taken, and the sum holds by construction.
  bool measured = false;
  // wall - (wait + stage + compute + gaps): > 0, the backend's timers missed engine work
  // (host enqueue times, a phase not timed); < 0, idle time inside the timed phases (a
  // launch-bound GPU, a preempted CPU thread between primitives), counted by both sources.
  double residual() const { return wall - (wait + stage + compute + gaps); }
  // |residual| within `tolerance` of wall: the measurement is consistent.
  bool balanced(double tolerance = kTolerance) const;
  static constexpr double kTolerance = 0.02;
};

const char* wall_from_name(StepAccount::WallFrom w);

// The account of one collected step whose gap figures are filled (train_loop.h StepRecord).
// `asynchronous`: the backend's ActivityTimeline; `activity`: whether the loop analysed
// activity records (LoopConfig::activity).
StepAccount account_step(const StepRecord& r, bool asynchronous, bool activity);

}  // namespace stoker
