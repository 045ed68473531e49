// SPDX-License-Identifier: Apache-2.0
#include "train/step_account.h"

#include <algorithm>
#include <cmath>

namespace stoker {

bool StepAccount::balanced(double tolerance) const {
  return std::abs(residual()) <= tolerance * wall;
}

const char* wall_from_name(StepAccount::WallFrom w) {
  switch (w) {
    case StepAccount::WallFrom::host:
      return "host";
    case StepAccount::WallFrom::device_records:
      return "device records";
    case StepAccount::WallFrom::device_clock:
      return "device clock";
    case StepAccount::WallFrom::host_for_device:
      return "host enqueue";
  }
  return "?";
}

StepAccount account_step(const StepRecord& r, bool asynchronous, bool activity) {
  StepAccount a;
  a.timed_compute = r.forward + r.backward + r.update + r.allreduce_wait;
  a.compute = a.timed_compute;
  a.stage = r.stage_compute;
  a.measured = activity && r.window > 0;
  if (a.measured) {
    // The window the gap figures analysed: the host's on a CPU, the device's own otherwise;
    // its busy time is the stage (the timer's) and the compute (the rest).
    a.wall = r.window;
    a.wall_from =
        asynchronous ? StepAccount::WallFrom::device_records : StepAccount::WallFrom::host;
    a.wait = r.gap_during_wait;
    a.gaps = r.gap - r.gap_during_wait;
    a.compute = std::max(0.0, r.window - r.gap - a.stage);
    return a;
  }
  if (!asynchronous) {
    a.wall = r.total - r.reshape;  // as the records' host window: the re-plan left out
    a.wait = r.wait;               // the engine is the host's thread: idle while it waits
  } else if (r.engine_wall > 0) {
    a.wall = r.engine_wall;
    a.wall_from = StepAccount::WallFrom::device_clock;
  } else {
    a.wall = r.total;
    a.wall_from = StepAccount::WallFrom::host_for_device;
  }
  a.gaps = a.wall - a.wait - a.stage - a.compute;
  return a;
}

}  // namespace stoker
