// SPDX-License-Identifier: Apache-2.0
// Learning rate per step: linear warm-up, then constant, step decay or cosine annealing, as
// torch's LinearLR followed (SequentialLR) by MultiStepLR or CosineAnnealingLR; plus the
// linear scaling rule (lr = base_lr x batch / 256). A pure function of the step, so a
// resumed run gets exactly the rate the uninterrupted one had.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace stoker {

struct LrSchedule {
  enum class Kind { constant, step, cosine } kind = Kind::cosine;
  double base_lr = 0.1;
  size_t warmup_steps = 0;
  double warmup_start_factor = 0.1;  // lr starts at base_lr x this and rises linearly
  std::vector<size_t> milestones;    // step: steps (counted after warm-up) where lr x= gamma
  double gamma = 0.1;
  size_t total_steps = 0;  // cosine: lr reaches min_lr here
  double min_lr = 0.0;
};

LrSchedule::Kind parse_lr_kind(const std::string& name);

// The rate for optimiser step `step` (0-based).
double lr_at(const LrSchedule& schedule, size_t step);

inline double linear_scaled_lr(double base_lr, size_t batch) {
  return base_lr * batch / 256.0;
}

}  // namespace stoker
