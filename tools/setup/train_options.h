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

#include "tools/options/loader_options.h"
#include "tools/options/option_table.h"
#include "train/backend.h"
#include "train/lr_schedule.h"
#include "train/sgd.h"

namespace stoker {

// The double a float default stands for: the one with the float's shortest decimal (0.9f is
// 0.9, not 0.89999997...), so that help, JSON and a checkpoint show the library's number.
double decimal_of(float f);

// Defaults are the library's own (SgdConfig, LrSchedule, BackendConfig), read, not restated;
// only what the library leaves to its caller (arch, lr, the warm-up's length) is decided here.
struct TrainOptions {
  std::string arch = "resnet50";
  int classes = 0;  // 0: the dataset's class count (synthetic: 1000)
  bool zero_init_residual = false;
  std::string backend = "cpu";
  int device = BackendConfig{}.device;  // cuda: device index
  std::string precision{precision_name(BackendConfig{}.precision)};
  std::string compute_layout{compute_layout_name(BackendConfig{}.layout)};
  std::string conv_algo = conv_algorithm_name(BackendConfig{}.conv_algorithm);
  std::string fusions = fusions_name(BackendConfig{}.fusions);  // train/lowering.h's words
  size_t workspace_limit_mib = BackendConfig{}.workspace_limit >> 20;
  bool graph = BackendConfig{}.graph;
  int threads = BackendConfig{}.threads;  // 0: every online CPU
  // Defaults that learn on the shipped datasets and on ImageNet (Goyal et al. 2017): the
  // linear scaling rule, 0.1 x batch / 256, and a linear warm-up over 5% of the schedule
  // (their 5 epochs of 90), then cosine decay. resolve_defaults() fills them in.
  double lr = -1;         // -1 (not given): 0.1 with scale_lr
  bool scale_lr = false;  // lr x batch / 256
  double momentum = decimal_of(SgdConfig{}.momentum);
  bool nesterov = SgdConfig{}.nesterov;
  double weight_decay = decimal_of(SgdConfig{}.weight_decay);
  bool bn_decay = SgdConfig{}.decay_bn_and_bias;
  std::string optimizer{optimizer_name(SgdConfig{}.optimizer)};  // sgd or lars (train/sgd.h)
  double lars_eta = decimal_of(SgdConfig{}.lars_eta);
  // Data parallelism (mpirun): BN statistics over every rank's batch; gradient bucket size.
  bool sync_bn = BackendConfig{}.sync_bn;
  double bucket_mb = double(BackendConfig{}.bucket_bytes) / double(1 << 20);
  std::string schedule_kind = "cosine";
  int64_t lr_warmup = -1;  // -1: 5% of the schedule's steps
  double warmup_start_factor = LrSchedule{}.warmup_start_factor;
  std::vector<size_t> milestones;
  double gamma = LrSchedule{}.gamma;
  double min_lr = LrSchedule{}.min_lr;
  int64_t total_steps = 0;  // the schedule's length; 0: this run's last step
  float label_smoothing = BackendConfig{}.label_smoothing;

  void add_to(CLI::App& app);
  // Replaces the "auto" values (lr -1, lr_warmup -1) by what they mean for a schedule of
  // total_steps steps; the resolved values are the ones stored in a checkpoint.
  void resolve_defaults(int64_t total_steps);
  // The backend options alone (train and eval share them).
  void add_backend_options(CLI::App& app);
  // The BackendConfig fields these options decide (not batch, size, input).
  void apply(BackendConfig& bc) const;
  SgdConfig sgd() const;
  LrSchedule schedule(int64_t batch, int64_t run_end_step) const;
};

// The group of the backend options in train_option_table() (train and eval register them).
constexpr uint32_t kBackendOption = 1;

// Every training option, one row each (tools/options/option_table.h): registration, the JSON a
// checkpoint stores, and what --resume does with each.
const std::vector<OptionRow<TrainOptions>>& train_option_table();

// The options that decide a run's numbers (the rows of both tables that are not per_run).
// `world`: the ranks training together; "global_batch" (world x --batch) is what a resume
// keeps.
nlohmann::json train_options_json(const TrainOptions& t, const LoaderOptions& l, int world = 1);
// Overwrites them from a checkpoint's stored config, by one rule for every row (a key an
// older checkpoint lacks is that option's default: restore_rows). stoker::Error naming `path`
// when the config is unreadable, or when an option given on the command line contradicts it;
// except --total-steps, which may change the schedule's length (a resumed run extended: the
// caller says so). On `world` ranks the per-rank --batch becomes the stored global batch / world (a
// run resumes on another number of ranks with the same global batch); stoker::Error when the
// global batch does not divide, or a --batch given contradicts it.
void restore_train_options(TrainOptions& t, LoaderOptions& l, const std::string& config,
                           const std::string& path, const CLI::App& app, int world = 1);

}  // namespace stoker
