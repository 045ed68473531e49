// SPDX-License-Identifier: Apache-2.0
// stoker train's resolutions: the evaluation's own size options (--val-size, --val-resize as
// torchvision's crop_size / resize_size; the loader they make is tools/setup/evaluate.h's) and the
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
#include "tools/options/loader_options.h"
#include "tools/per_size.h"
#include "train/train_loop.h"

namespace stoker {

void add_val_size_options(CLI::App& app, int& val_size, int& val_resize);
// stoker::UsageError for --val-size or --val-resize without --val.
void check_val_size(const std::string& val, const CLI::App& app);
// Steps grouped by size in order of first appearance (tools/per_size.h), each size with its
// FLOP per trained image; records before `warmup` count in `steps` and `reshape_s`
// only. Steps with no size (0) take height x width. `seconds`: per record, the step's time
// with re-plans left out, on the engine's clock (the step accounts' walls: a device's own
// time); empty: the host's, total - reshape. Its parts: the record's wait, stage (copy) and
// the engine's busy time (else the backend's phase times).
std::vector<SizeCost> cost_per_size(const std::vector<StepRecord>& records, size_t warmup,
                                    int64_t height, int64_t width, int64_t images_per_step,
                                    const Network& net, std::span<const double> seconds = {});
// FLOP per trained image over the timed steps of every size (their mean, weighted by steps).
double mean_flop_per_image(const std::vector<SizeCost>& sizes);
void print_per_size(const std::vector<SizeCost>& sizes);

}  // namespace stoker
