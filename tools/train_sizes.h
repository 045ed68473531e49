// SPDX-License-Identifier: Apache-2.0
// stoker train's resolutions: the evaluation's own size options (--val-size, --val-resize as
// torchvision's crop_size / resize_size; the loader they make is tools/evaluate.h's) and the
// cost of each training size when a size schedule (--size-schedule,
// loader/sampler/size_schedule.h) changes it over the run. Not the schedule itself (loader/)
// nor the backend's re-plan (Backend::reshape).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "loader/loader_config.h"
#include "models/network.h"
#include "tools/loader_options.h"
#include "train/train_loop.h"

namespace stoker {

void add_val_size_options(CLI::App& app, int& val_size, int& val_resize);
// stoker::UsageError for --val-size or --val-resize without --val.
void check_val_size(const std::string& val, const CLI::App& app);
// The steady-state cost of one training size.
struct SizeCost {
  int64_t height = 0, width = 0;
  int64_t steps = 0;  // steps at this size (timed ones: from the timing warm-up on)
  int64_t timed_steps = 0;
  double step_ms = 0;       // median over the timed steps
  double images_per_s = 0;  // timed images over their time, re-plans left out
  double reshape_s = 0;     // time re-planning the backend for this size (all steps)
  double flop_per_image = 0;
};
// Steps grouped by size in order of first appearance; records before `timing_warmup` count
// in `steps` and `reshape_s` only. Steps with no size (0) take height x width. `seconds`: per
// record, the step's time with re-plans left out, on the engine's clock (the step accounts'
// walls: a device's own time); empty: the host's, total - reshape.
std::vector<SizeCost> cost_per_size(const std::vector<StepRecord>& records, size_t timing_warmup,
                                    int64_t height, int64_t width, int64_t images_per_step,
                                    const Network& net, std::span<const double> seconds = {});
// FLOP per trained image over the timed steps of every size (their mean, weighted by steps).
double mean_flop_per_image(const std::vector<SizeCost>& sizes);
void print_per_size(const std::vector<SizeCost>& sizes);
nlohmann::json per_size_json(const std::vector<SizeCost>& sizes);

}  // namespace stoker
