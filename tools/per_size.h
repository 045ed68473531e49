// SPDX-License-Identifier: Apache-2.0
// The one per-size shape of `stoker bench`, `study` and `train` (docs/FORMATS.md, "PER_SIZE"):
// a run's steps (bench: batches) grouped by output size in order of first appearance, each
// size with the time of its measured steps, split as a consumer sees a step: waiting for the
// batch, staging it on the engine (the copy in and any conversion), the engine's compute, and the
// gap that is left. Each command fills it from its own loop (a size schedule changes the size); not
// a timer.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

namespace stoker {

struct SizeCost {
  int64_t height = 0, width = 0;
  int64_t steps = 0;        // steps (bench: batches) at this size
  int64_t timed_steps = 0;  // of them, the measured ones (after the warm-up)
  int64_t images = 0;       // in the measured steps
  // The measured steps' seconds, each step's; and summed by part (the rest is the gap).
  std::vector<double> step_s;
  double wait_s = 0, stage_s = 0, compute_s = 0;
  // A trainer's (train): the seconds re-planning the backend for this size (every step), and
  // the FLOP per trained image at this size; negative: not known (left out of the JSON).
  double reshape_s = -1, flop_per_image = -1;

  // A measured step of `images` images, `seconds` long, of which `wait`, `stage`, `compute`.
  void add_timed(double seconds, double wait, double stage, double compute, int64_t images);
  double seconds() const;       // the measured steps' total
  double images_per_s() const;  // images / seconds()
  double median_step_s() const;
};

// The entry of `height` x `width` in `sizes`, added at the end when it is new.
SizeCost& size_cost(std::vector<SizeCost>& sizes, int64_t height, int64_t width);

// The `per_size` array (docs/FORMATS.md, "PER_SIZE").
nlohmann::json per_size_json(const std::vector<SizeCost>& sizes);

}  // namespace stoker
