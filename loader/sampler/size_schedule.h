// SPDX-License-Identifier: Apache-2.0
// The output size as a function of the epoch (or of the global step): progressive resizing as
// FFCV does it (min_res, max_res, start_ramp, end_ramp; interior sizes rounded to a multiple of
// 32). A pure function of (epoch, step), so every reader and every resumed run agrees on it.
// Square sizes only; a fixed --size HxW stays what it is.
#pragma once

#include <cstdint>
#include <string>

namespace stoker {

struct SizeSchedule {
  enum class Unit { epochs, steps };
  int min = 0, max = 0;        // pixels, min <= max; 0, 0: no schedule (the fixed --size)
  int64_t start = 0, end = 0;  // the ramp: min up to `start`, max from `end` on
  Unit unit = Unit::epochs;

  bool active() const { return max > 0; }
  // The side at epoch `epoch` or global step `step` (whichever the unit counts): FFCV's
  // get_resolution (np.interp, then np.round(x / 32) * 32, ties to even).
  int at(uint64_t epoch, uint64_t step) const;
  // The largest side the schedule reaches (max, or max rounded up to a multiple of 32 when a
  // ramp value rounds past it): what the batch pool is sized for.
  int largest() const;
  // "MIN:MAX@A-B" or "MIN:MAX@steps:A-B" (as parsed), or "" when not active.
  std::string text() const;
};

// "MIN:MAX@A-B": MIN px up to epoch A, a linear ramp to MAX by epoch B (interior values rounded
// to a multiple of 32), MAX after; "MIN:MAX@steps:A-B" counts global optimiser steps instead
// ("epochs:" may be said too); "N": N px throughout. Sides 32..8192, MIN <= MAX, A <= B; a
// size written HxW is refused as such (schedules are square). stoker::UsageError naming
// `option`, the text and what is wrong.
SizeSchedule parse_size_schedule(const std::string& text, const char* option = "--size-schedule");

}  // namespace stoker
