// SPDX-License-Identifier: Apache-2.0
#include "tools/train_options.h"

#include <fmt/format.h>

#include <limits>

#include "common/error.h"
#include "models/resnet.h"
#include "tools/option_checks.h"

namespace stoker {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

void TrainOptions::add_to(CLI::App& app) {
  app.add_option("--arch", arch, "resnet18, resnet34, resnet50, resnet101 or resnet152")
      ->capture_default_str()
      ->check(parsed_by([](const std::string& s) { parse_resnet_arch(s); }, "ARCH"));
  app.add_option("--classes", classes, "Output classes (default: the dataset's; synthetic 1000)")
      ->check(integer_in(1, 1 << 20));
  app.add_flag("--zero-init-residual", zero_init_residual,
               "Start the last BN of each residual branch at 0 (each block starts as identity)");
  add_backend_options(app);
  app.add_option("--lr", lr, "Base learning rate (default: 0.1 x batch / 256)")
      ->check(number_in(0, kInf));
  app.add_flag("--scale-lr", scale_lr, "Linear scaling rule: --lr x batch / 256");
  app.add_option("--momentum", momentum, "SGD momentum")
      ->capture_default_str()
      ->check(number_in(0, 1));
  app.add_flag("--nesterov", nesterov, "Nesterov momentum");
  app.add_option("--weight-decay", weight_decay, "L2 weight decay")
      ->capture_default_str()
      ->check(number_in(0, kInf));
  app.add_flag_callback(
      "--no-bn-decay", [this] { bn_decay = false; }, "No weight decay on BN parameters and biases");
  app.add_option("--optimizer", optimizer,
                 "sgd, or lars (layer-wise trust ratio, You et al. 2017; BN and biases excluded)")
      ->capture_default_str()
      ->check(parsed_by([](const std::string& s) { parse_optimizer(s); }, "OPTIMIZER"));
  app.add_option("--lars-eta", lars_eta, "lars: the trust coefficient")
      ->capture_default_str()
      ->check(number_in(0, kInf, true));
  app.add_flag("--sync-bn", sync_bn,
               "mpirun: batch-norm statistics over every rank's batch (default: per rank)");
  app.add_option("--bucket-mb", bucket_mb,
                 "mpirun: MiB of gradients per all-reduce bucket, started during the backward")
      ->capture_default_str()
      ->check(number_in(0, 1 << 20, true));
  app.add_option("--schedule", schedule_kind, "constant, step or cosine (after the warm-up)")
      ->capture_default_str()
      ->check(parsed_by([](const std::string& s) { parse_lr_kind(s); }, "SCHEDULE"));
  app.add_option("--lr-warmup", lr_warmup,
                 "Steps of linear warm-up (default: 5% of the schedule's steps)")
      ->check(integer_in(0, INT64_MAX));
  app.add_option("--milestones", milestones, "step: steps (after warm-up) where lr x= gamma")
      ->check(integer_in(1, INT64_MAX));
  app.add_option("--gamma", gamma, "step: the decay factor")
      ->capture_default_str()
      ->check(number_in(0, kInf, true));
  app.add_option("--min-lr", min_lr, "cosine: the final rate")
      ->capture_default_str()
      ->check(number_in(0, kInf));
  app.add_option("--total-steps", total_steps,
                 "Length of the schedule (default: the last step of this run)")
      ->check(integer_in(1, INT64_MAX));
  app.add_option("--label-smoothing", label_smoothing, "Cross-entropy label smoothing")
      ->capture_default_str()
      ->check(number_in(0.0, 1.0));
}

void TrainOptions::add_backend_options(CLI::App& app) {
  app.add_option("--backend", backend, "cpu (oneDNN) or cuda (cuDNN + cuBLAS, when built in)")
      ->capture_default_str()
      ->check(parsed_by(
          [](const std::string& s) {
            if (s != "cpu" && s != "cuda" && s != "gpu")
              fail("unknown backend '{}': expected cpu or cuda", s);
          },
          "BACKEND"));
  app.add_option("--device", device, "cuda: the CUDA device index")
      ->capture_default_str()
      ->check(integer_in(0, 1023));
  app.add_option("--precision", precision,
                 "f32, tf32 (cuda), f16 (cuda, loss scaling) or bf16 (cuda; cpu with native bf16)")
      ->capture_default_str()
      ->check(parsed_by([](const std::string& s) { parse_precision(s); }, "PRECISION"));
  app.add_option("--compute-layout", compute_layout,
                 "Activations inside the backend: auto, nchw or nhwc (cuda; the cpu keeps "
                 "oneDNN's blocked layouts)")
      ->capture_default_str()
      ->check(parsed_by([](const std::string& s) { parse_compute_layout(s); }, "LAYOUT"));
  app.add_option("--conv-algo", conv_algo,
                 "Convolutions: heuristic (the library's choice), exhaustive (cuda: measured), "
                 "fixed:<name> (cpu: fixed:direct, fixed:winograd); older words auto, direct, "
                 "winograd still mean heuristic, fixed:direct, fixed:winograd")
      ->capture_default_str();
  app.add_option("--workspace-limit", workspace_limit_mib,
                 "cuda: MiB a convolution may borrow as workspace")
      ->capture_default_str()
      ->check(integer_in(0, 1u << 30));
  app.add_flag("--graph", graph, "cuda: capture the step into a CUDA Graph");
  app.add_option("--threads", threads, "Compute threads (default: every core)")
      ->check(integer_in(1, 4096));
}

void TrainOptions::apply(BackendConfig& bc) const {
  bc.device = device;
  bc.precision = parse_precision(precision);
  bc.layout = parse_compute_layout(compute_layout);
  bc.conv_algorithm = canonical_conv_algo(conv_algo);
  bc.workspace_limit = workspace_limit_mib << 20;
  bc.graph = graph;
  bc.sync_bn = sync_bn;
  bc.bucket_bytes = size_t(bucket_mb * double(1 << 20));
}

std::string canonical_conv_algo(const std::string& word) {
  if (word == "auto") return "heuristic";
  if (word == "direct" || word == "winograd") return "fixed:" + word;
  return word;
}

void TrainOptions::resolve_defaults(int64_t total) {
  if (lr < 0) {
    lr = 0.1;
    scale_lr = true;
  }
  if (lr_warmup < 0) lr_warmup = total / 20;
}

SgdConfig TrainOptions::sgd() const {
  SgdConfig c;
  c.momentum = float(momentum);
  c.nesterov = nesterov;
  c.weight_decay = float(weight_decay);
  c.decay_bn_and_bias = bn_decay;
  c.optimizer = parse_optimizer(optimizer);
  c.lars_eta = float(lars_eta);
  if (nesterov && momentum <= 0) usage_fail("--nesterov needs a momentum above 0");
  return c;
}

LrSchedule TrainOptions::schedule(int64_t batch, int64_t run_end_step) const {
  STOKER_CHECK_MSG(lr >= 0 && lr_warmup >= 0, "resolve_defaults() first (lr {}, warm-up {})", lr,
                   lr_warmup);
  LrSchedule s;
  s.kind = parse_lr_kind(schedule_kind);
  s.base_lr = scale_lr ? linear_scaled_lr(lr, size_t(batch)) : lr;
  s.warmup_steps = size_t(lr_warmup);
  s.warmup_start_factor = warmup_start_factor;
  s.milestones = milestones;
  s.gamma = gamma;
  s.min_lr = min_lr;
  s.total_steps = size_t(total_steps > 0 ? total_steps : run_end_step);
  return s;
}

nlohmann::json train_options_json(const TrainOptions& t, const LoaderOptions& l, int world) {
  return {{"arch", t.arch},
          {"classes", t.classes},
          {"zero_init_residual", t.zero_init_residual},
          {"precision", t.precision},
          {"conv_algo", t.conv_algo},
          {"lr", t.lr},
          {"scale_lr", t.scale_lr},
          {"momentum", t.momentum},
          {"nesterov", t.nesterov},
          {"weight_decay", t.weight_decay},
          {"bn_decay", t.bn_decay},
          {"optimizer", t.optimizer},
          {"lars_eta", t.lars_eta},
          {"sync_bn", t.sync_bn},
          {"schedule", t.schedule_kind},
          {"lr_warmup", t.lr_warmup},
          {"warmup_start_factor", t.warmup_start_factor},
          {"milestones", t.milestones},
          {"gamma", t.gamma},
          {"min_lr", t.min_lr},
          {"total_steps", t.total_steps},
          {"label_smoothing", t.label_smoothing},
          {"batch", l.batch},
          {"global_batch", l.batch * size_t(world)},
          {"size", l.size},
          {"height", l.height},
          {"mean", l.mean},
          {"std", l.std},
          {"transform", l.transform},
          {"flip", l.flip},
          {"seed", l.seed},
          {"no_shuffle", l.no_shuffle},
          {"layout", l.layout},
          {"jitter", l.jitter},
          {"grayscale", l.grayscale},
          {"resize_filter", l.resize_filter},
          {"size_schedule", l.size_schedule}};
}

namespace {

template <class T>
void take(const nlohmann::json& j, const char* key, const char* option, T& field,
          const std::string& path, const CLI::App& app) {
  if (!j.contains(key)) fail("{}: the stored run options have no '{}'", path, key);
  const T stored = j.at(key).get<T>();
  if (app.count(option) > 0 && !(stored == field))
    fail("{}: {} {} contradicts the run being resumed ({}); a resumed run keeps its options", path,
         option, nlohmann::json(field).dump(), nlohmann::json(stored).dump());
  field = stored;
}

// take() for a key older run options lack: those runs had `absent`.
template <class T>
void take_or(const nlohmann::json& j, const char* key, const char* option, T& field,
             const T& absent, const std::string& path, const CLI::App& app) {
  if (j.contains(key)) return take(j, key, option, field, path, app);
  if (app.count(option) > 0 && !(absent == field))
    fail("{}: {} {} contradicts the run being resumed ({}); a resumed run keeps its options", path,
         option, nlohmann::json(field).dump(), nlohmann::json(absent).dump());
  field = absent;
}

}  // namespace

void restore_train_options(TrainOptions& t, LoaderOptions& l, const std::string& config,
                           const std::string& path, const CLI::App& app, int world) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(config);
    take(j, "arch", "--arch", t.arch, path, app);
    take(j, "classes", "--classes", t.classes, path, app);
    take(j, "zero_init_residual", "--zero-init-residual", t.zero_init_residual, path, app);
    take(j, "precision", "--precision", t.precision, path, app);
    // Older checkpoints store auto/direct/winograd: compare and keep the canonical words.
    t.conv_algo = canonical_conv_algo(t.conv_algo);
    j["conv_algo"] = canonical_conv_algo(j.at("conv_algo").get<std::string>());
    take(j, "conv_algo", "--conv-algo", t.conv_algo, path, app);
    take(j, "lr", "--lr", t.lr, path, app);
    take(j, "scale_lr", "--scale-lr", t.scale_lr, path, app);
    take(j, "momentum", "--momentum", t.momentum, path, app);
    take(j, "nesterov", "--nesterov", t.nesterov, path, app);
    take(j, "weight_decay", "--weight-decay", t.weight_decay, path, app);
    take(j, "bn_decay", "--no-bn-decay", t.bn_decay, path, app);
    // Checkpoints from before LARS and sync BN: SGD, per-rank statistics.
    for (const auto& [key, value] : {std::pair<const char*, nlohmann::json>{"optimizer", "sgd"},
                                     {"lars_eta", 0.001},
                                     {"sync_bn", false}})
      if (!j.contains(key)) j[key] = value;
    take(j, "optimizer", "--optimizer", t.optimizer, path, app);
    take(j, "lars_eta", "--lars-eta", t.lars_eta, path, app);
    take(j, "sync_bn", "--sync-bn", t.sync_bn, path, app);
    take(j, "schedule", "--schedule", t.schedule_kind, path, app);
    take(j, "lr_warmup", "--lr-warmup", t.lr_warmup, path, app);
    take(j, "warmup_start_factor", "--lr-warmup", t.warmup_start_factor, path, app);
    take(j, "milestones", "--milestones", t.milestones, path, app);
    take(j, "gamma", "--gamma", t.gamma, path, app);
    take(j, "min_lr", "--min-lr", t.min_lr, path, app);
    // The one option a resumed run may change: a longer (or shorter) schedule.
    if (app.count("--total-steps") == 0) t.total_steps = j.at("total_steps").get<int64_t>();
    take(j, "label_smoothing", "--label-smoothing", t.label_smoothing, path, app);
    // The global batch is the run's (older checkpoints: one process, "batch" is global).
    const size_t global = j.contains("global_batch") ? j.at("global_batch").get<size_t>()
                                                     : j.at("batch").get<size_t>();
    const size_t ranks = size_t(world);
    if (app.count("--batch") > 0 && l.batch * ranks != global)
      fail(
          "{}: --batch {} on {} rank{} is a global batch of {}, but the run being resumed has {}; "
          "a resumed run keeps its global batch{}",
          path, l.batch, ranks, ranks == 1 ? "" : "s", l.batch * ranks, global,
          global % ranks == 0 ? fmt::format(" (--batch {} here)", global / ranks) : "");
    if (global % ranks != 0)
      fail(
          "{}: the run being resumed has a global batch of {}, which {} ranks cannot share "
          "evenly; resume on a number of ranks that divides it",
          path, global, ranks);
    l.batch = global / ranks;
    take(j, "size", "--size", l.size, path, app);
    // Newer than the first checkpoints: absent means square and ImageNet's mean and std.
    take_or(j, "height", "--size", l.height, 0, path, app);
    take_or(j, "mean", "--mean", l.mean, OutputSpec{}.mean, path, app);
    take_or(j, "std", "--std", l.std, OutputSpec{}.std, path, app);
    take(j, "transform", "--transform", l.transform, path, app);
    take(j, "flip", "--flip", l.flip, path, app);
    take(j, "seed", "--seed", l.seed, path, app);
    take(j, "no_shuffle", "--no-shuffle", l.no_shuffle, path, app);
    take(j, "layout", "--layout", l.layout, path, app);
    // Checkpoints older than these options trained with none of them (their defaults).
    if (j.contains("jitter")) take(j, "jitter", "--jitter", l.jitter, path, app);
    if (j.contains("grayscale")) take(j, "grayscale", "--grayscale", l.grayscale, path, app);
    if (j.contains("resize_filter"))
      take(j, "resize_filter", "--resize-filter", l.resize_filter, path, app);
    take_or(j, "size_schedule", "--size-schedule", l.size_schedule, std::string(), path, app);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: the stored run options are not what stoker train writes: {}", path, e.what());
  }
}

}  // namespace stoker
