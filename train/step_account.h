// SPDX-License-Identifier: Apache-2.0
// Where one step's time went, on the compute engine's own timeline: wait + stage + compute +
// gaps = wall. With activity records the engine's records split the step's window into busy
// time (stage, from the backend's timer, and compute, the rest of the busy time) and idle time
// (during the loop's data waits = wait, the rest = gaps, between kernels or primitives), so
// the four terms partition the window; the backend's own timers (events on a GPU's stream, the
// clock around the work on a CPU) are then the check: their phases must span the window less
// its waits (their spans hold the kernels and the gaps between them). The first H200 run's
// event-timed compute plus the records' gaps counted the gaps inside the phases twice (2.3%
// of a step). Not the summary of a run (step_summary.h).
#pragma once

#include "train/train_loop.h"

namespace stoker {

struct StepAccount {
  // Seconds. `wall`: the step's window on the engine's timeline (a CPU: the loop's host
  // window less its re-plan, StepRecord::reshape; a device: its own records' window, else its own
  // clock, else the host's).
  double wall = 0, wait = 0, stage = 0, compute = 0, gaps = 0;
  // The backend's own timers for forward + backward + update + exposed all-reduce (events on a
  // GPU): with records, the check on them; without, `compute` itself.
  double timed_compute = 0;
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
  // The engine's time the backend's timers leave unexplained: wall - wait - (stage +
  // timed_compute). > 0, the timers missed engine work (graph steps timed by the host's
  // enqueue, a phase not timed, host delays between steps that are not data waits); < 0,
  // the timers count more than the records' window holds (records lost, a clock mismatch).
  // Without records the terms are the timers' and gaps what is left: 0 by construction.
  double residual() const { return wall - wait - stage - timed_compute - (measured ? 0 : gaps); }
  // |residual| within `tolerance` of wall: the measurement is consistent.
  bool balanced(double tolerance = kTolerance) const;
  static constexpr double kTolerance = 0.02;
};

const char* wall_from_name(StepAccount::WallFrom w);

// The account of one collected step whose gap figures are filled (train_loop.h StepRecord).
// `asynchronous`: the backend's BackendCaps::asynchronous; `activity`: whether the loop analysed
// activity records (LoopConfig::activity).
StepAccount account_step(const StepRecord& r, bool asynchronous, bool activity);

}  // namespace stoker
