// SPDX-License-Identifier: Apache-2.0
// What a training run computes (model, backend, precision, optimiser, schedule), as
// command-line options, as the JSON stored in a checkpoint's run state, and back: a --resume
// takes them from the checkpoint so the resumed run is the uninterrupted one.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/loader_options.h"
#include "train/lr_schedule.h"
#include "train/sgd.h"

namespace stoker {

struct TrainOptions {
  std::string arch = "resnet50";
  int classes = 0;  // 0: the dataset's class count (synthetic: 1000)
  bool zero_init_residual = false;
  std::string backend = "cpu";
  std::string precision = "f32";
  std::string conv_algo = "auto";
  int threads = 0;  // 0: every online CPU
  double lr = 0.1;
  bool scale_lr = false;  // lr x batch / 256
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 1e-4;
  bool bn_decay = true;
  std::string schedule_kind = "cosine";
  int64_t lr_warmup = 0;
  double warmup_start_factor = 0.1;
  std::vector<size_t> milestones;
  double gamma = 0.1;
  double min_lr = 0.0;
  int64_t total_steps = 0;  // the schedule's length; 0: this run's last step
  float label_smoothing = 0.0f;

  void add_to(CLI::App& app);
  SgdConfig sgd() const;
  LrSchedule schedule(int64_t batch, int64_t run_end_step) const;
};

// The options that decide a run's numbers (these and the loader's data options).
nlohmann::json train_options_json(const TrainOptions& t, const LoaderOptions& l);
// Overwrites them from a checkpoint's stored config. stoker::Error naming `path` when the
// config is unreadable, or when an option given on the command line contradicts it.
void restore_train_options(TrainOptions& t, LoaderOptions& l, const std::string& config,
                           const std::string& path, const CLI::App& app);

}  // namespace stoker
