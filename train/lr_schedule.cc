// SPDX-License-Identifier: Apache-2.0
#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "common/error.h"

namespace stoker {

LrSchedule::Kind parse_lr_kind(const std::string& name) {
  if (name == "constant") return LrSchedule::Kind::constant;
  if (name == "step") return LrSchedule::Kind::step;
  if (name == "cosine") return LrSchedule::Kind::cosine;
  fail("unknown learning-rate schedule '{}': expected constant, step or cosine", name);
}

double lr_at(const LrSchedule& s, size_t step) {
  if (step < s.warmup_steps) {
    // torch LinearLR: factor goes from start_factor to 1 over warmup_steps steps.
    const double f = s.warmup_start_factor +
                     (1.0 - s.warmup_start_factor) * static_cast<double>(step) / s.warmup_steps;
    return s.base_lr * f;
  }
  const size_t t = step - s.warmup_steps;
  switch (s.kind) {
    case LrSchedule::Kind::constant:
      return s.base_lr;
    case LrSchedule::Kind::step: {
      const auto passed =
          std::count_if(s.milestones.begin(), s.milestones.end(), [&](size_t m) { return t >= m; });
      return s.base_lr * std::pow(s.gamma, static_cast<double>(passed));
    }
    case LrSchedule::Kind::cosine: {
      STOKER_CHECK(s.total_steps > s.warmup_steps);
      const double span = static_cast<double>(s.total_steps - s.warmup_steps);
      const double x = std::min(static_cast<double>(t), span) / span;
      return s.min_lr + (s.base_lr - s.min_lr) * (1.0 + std::cos(std::numbers::pi * x)) / 2.0;
    }
  }
  return s.base_lr;
}

}  // namespace stoker
