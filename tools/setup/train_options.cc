// SPDX-License-Identifier: Apache-2.0
#include "tools/setup/train_options.h"

#include <fmt/format.h>

#include <cstdlib>
#include <limits>

#include "common/error.h"
#include "models/resnet.h"
#include "tools/options/option_checks.h"

namespace stoker {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// The trainer rows' idle rules (tools/options/idle_rules.h). Schedule and optimizer names are
// compared as text (the words train/'s parsers take): a name neither knows applies no rule,
// and its row's own check refuses it. Both triggers are kept in a checkpoint: a resumed run's
// rule holds only where the trigger is given again.
IdleWith unless_step_schedule() {
  return {
      .trigger = "--schedule",
      .example = "cosine",
      .why = "they shape a step schedule",
      .when = [](const std::string& v) { return v.empty() || v == "cosine" || v == "constant"; },
      .from_checkpoint = true};
}
IdleWith unless_cosine_schedule() {
  return {.trigger = "--schedule",
          .example = "step",
          .why = "it ends a cosine schedule",
          .when = [](const std::string& v) { return v == "step" || v == "constant"; },
          .from_checkpoint = true};
}
IdleWith unless_lars() {
  return {.trigger = "--optimizer",
          .example = "sgd",
          .why = "it is LARS's",
          .when = [](const std::string& v) { return v == "sgd"; },
          .from_checkpoint = true};
}
}  // namespace

double decimal_of(float f) {
  return std::strtod(fmt::format("{}", f).c_str(), nullptr);
}

void TrainOptions::add_to(CLI::App& app) {
  add_rows<TrainOptions>(train_option_table(), app, *this, [](const auto&) { return true; });
}

void TrainOptions::add_backend_options(CLI::App& app) {
  add_rows<TrainOptions>(train_option_table(), app, *this,
                         [](const auto& r) { return (r.group & kBackendOption) != 0; });
}

const std::vector<OptionRow<TrainOptions>>& train_option_table() {
  using T = TrainOptions;
  using Row = OptionRow<T>;
  constexpr OnResume kept = OnResume::kept;
  static const std::vector<Row> table = [] {
    std::vector<Row> t;
    t.push_back(option_row("arch", "--arch", &T::arch,
                           "resnet18, resnet34, resnet50, resnet101 or resnet152")
                    .checked(parsed_by([](const std::string& s) { parse_resnet_arch(s); }, "ARCH"))
                    .on_resume(kept));
    t.push_back(option_row("classes", "--classes", &T::classes,
                           "Output classes (default: the dataset's; synthetic 1000)")
                    .integer_range(1, 1 << 20)
                    .no_default()
                    .on_resume(kept));
    t.push_back(option_row("zero_init_residual", "--zero-init-residual", &T::zero_init_residual,
                           "Start the last BN of each residual branch at 0 (each block starts as "
                           "identity)")
                    .on_resume(kept));
    // The backend options (eval registers them too): each run chooses its engine.
    // "gpu", the older name of "cuda", is read as "cuda" (backend_name), so that everything
    // after the parse (and the JSON) sees one name.
    t.push_back(option_row("backend", "--backend", &T::backend,
                           "cpu (oneDNN) or cuda (cuDNN + cuBLAS, when built in; gpu: its older "
                           "name, deprecated)")
                    .checked(parsed_by(
                        [](const std::string& s) {
                          if (s != "cpu" && backend_name(s) != "cuda")
                            fail("unknown backend '{}': expected cpu or cuda", s);
                        },
                        "BACKEND"))
                    .in(kBackendOption)
                    .added_by([](CLI::App& app, T& o, const Row& r) {
                      CLI::Option* opt = app.add_option(r.names(), o.backend, r.help);
                      opt->capture_default_str()->check(*r.check);
                      opt->transform(CLI::Validator(
                          [](std::string& s) {
                            s = std::string(backend_name(s));
                            return std::string();
                          },
                          "", "backend_name"));
                      return opt;
                    }));
    t.push_back(option_row("device", "--device", &T::device, "cuda: the CUDA device index")
                    .integer_range(0, 1023)
                    .in(kBackendOption));
    t.push_back(
        option_row("precision", "--precision", &T::precision,
                   "f32, tf32 (cuda), f16 (cuda, loss scaling) or bf16 (cuda; cpu with "
                   "native bf16)")
            .checked(parsed_by([](const std::string& s) { parse_precision(s); }, "PRECISION"))
            .on_resume(kept)
            .in(kBackendOption));
    t.push_back(
        option_row("compute_layout", "--compute-layout", &T::compute_layout,
                   "Activations inside the backend: auto, nchw or nhwc (cuda; the cpu "
                   "keeps oneDNN's blocked layouts)")
            .checked(parsed_by([](const std::string& s) { parse_compute_layout(s); }, "LAYOUT"))
            .in(kBackendOption));
    // One parser (train/conv_algorithm.h). Older checkpoints store the older words: both sides
    // compare in the canonical ones.
    Row conv =
        option_row("conv_algo", "--conv-algo", &T::conv_algo,
                   "Convolutions: heuristic (the library's choice), exhaustive (cuda: "
                   "measured), fixed:<name> (cpu: fixed:direct; cuda: cuDNN's names); "
                   "older words auto, direct, winograd still mean heuristic, fixed:direct, "
                   "fixed:winograd")
            .checked(parsed_by([](const std::string& s) { parse_conv_algorithm(s); }, "ALGORITHM"))
            .stored_as([](const T& o) -> nlohmann::json {
              return conv_algorithm_name(parse_conv_algorithm(o.conv_algo));
            });
    conv.set = [](T& o, const nlohmann::json& j) {
      o.conv_algo = conv_algorithm_name(parse_conv_algorithm(j.get<std::string>()));
    };
    // Given on the command line it wins over the stored one: the algorithm changes only the
    // rounding, and a checkpoint of oneDNN 2.6's fixed:winograd, which oneDNN 3 lacks, must
    // be able to go on as fixed:direct. Not given, the stored one keeps a resume exact.
    t.push_back(std::move(conv).on_resume(OnResume::may_grow).in(kBackendOption));
    // Fusion changes only the rounding (the fused kernels' order of sums), like the algorithm:
    // given on the command line it wins over the stored list.
    Row fuse =
        option_row("fusions", "--fusions", &T::fusions,
                   "Layer patterns fused where the backend runs them: a comma-separated list "
                   "of bn_relu, bn_add_relu, conv_stats (cuda, cuDNN frontend graphs; not yet "
                   "default), or none")
            .checked(parsed_by([](const std::string& s) { parse_fusions(s); }, "LIST"))
            .stored_as([](const T& o) -> nlohmann::json {
              return fusions_name(parse_fusions(o.fusions));
            });
    fuse.set = [](T& o, const nlohmann::json& j) {
      o.fusions = fusions_name(parse_fusions(j.get<std::string>()));
    };
    t.push_back(std::move(fuse).on_resume(OnResume::may_grow).in(kBackendOption));
    t.push_back(option_row("workspace_limit_mib", "--workspace-limit", &T::workspace_limit_mib,
                           "cuda: MiB a convolution may borrow as workspace")
                    .integer_range(0, 1u << 30)
                    .in(kBackendOption));
    t.push_back(
        option_row("graph", "--graph", &T::graph, "cuda: capture the step into a CUDA Graph")
            .in(kBackendOption));
    t.push_back(
        option_row("threads", "--threads", &T::threads, "Compute threads (default: every core)")
            .integer_range(1, 4096)
            .no_default()
            .in(kBackendOption));
    t.push_back(option_row("lr", "--lr", &T::lr, "Base learning rate (default: 0.1 x batch / 256)")
                    .number_range(0, kInf)
                    .no_default()
                    .on_resume(kept));
    t.push_back(option_row("scale_lr", "--scale-lr", &T::scale_lr,
                           "Linear scaling rule: --lr x batch / 256")
                    .on_resume(kept));
    t.push_back(option_row("momentum", "--momentum", &T::momentum, "SGD momentum")
                    .number_range(0, 1)
                    .on_resume(kept));
    t.push_back(
        option_row("nesterov", "--nesterov", &T::nesterov, "Nesterov momentum").on_resume(kept));
    t.push_back(option_row("weight_decay", "--weight-decay", &T::weight_decay, "L2 weight decay")
                    .number_range(0, kInf)
                    .on_resume(kept));
    t.push_back(field_row("bn_decay", "--no-bn-decay", &T::bn_decay,
                          "No weight decay on BN parameters and biases")
                    .on_resume(kept)
                    .added_by([](CLI::App& app, T& o, const Row& r) {
                      return app.add_flag_callback(
                          r.flag, [&o] { o.bn_decay = false; }, r.help);
                    }));
    t.push_back(
        option_row("optimizer", "--optimizer", &T::optimizer,
                   "sgd, or lars (layer-wise trust ratio, You et al. 2017; BN and biases "
                   "excluded)")
            .checked(parsed_by([](const std::string& s) { parse_optimizer(s); }, "OPTIMIZER"))
            .on_resume(kept));
    t.push_back(option_row("lars_eta", "--lars-eta", &T::lars_eta, "lars: the trust coefficient")
                    .number_range(0, kInf, true)
                    .idle_with(unless_lars())
                    .on_resume(kept));
    t.push_back(option_row("sync_bn", "--sync-bn", &T::sync_bn,
                           "mpirun: batch-norm statistics over every rank's batch (default: per "
                           "rank)")
                    .on_resume(kept));
    t.push_back(option_row("bucket_mb", "--bucket-mb", &T::bucket_mb,
                           "mpirun: MiB of gradients per all-reduce bucket, started during the "
                           "backward")
                    .number_range(0, 1 << 20, true));
    t.push_back(option_row("schedule", "--schedule", &T::schedule_kind,
                           "constant, step or cosine (after the warm-up)")
                    .checked(parsed_by([](const std::string& s) { parse_lr_kind(s); }, "SCHEDULE"))
                    .on_resume(kept));
    t.push_back(option_row("lr_warmup", "--lr-warmup", &T::lr_warmup,
                           "Steps of linear warm-up (default: 5% of the schedule's steps)")
                    .integer_range(0, INT64_MAX)
                    .no_default()
                    .on_resume(kept));
    // Not an option: stored so that a later default cannot change a resumed run.
    t.push_back(
        option_row("warmup_start_factor", nullptr, &T::warmup_start_factor, "").on_resume(kept));
    t.push_back(option_row("milestones", "--milestones", &T::milestones,
                           "step: steps (after warm-up) where lr x= gamma")
                    .integer_range(1, INT64_MAX)
                    .no_default()
                    .idle_with(unless_step_schedule())
                    .on_resume(kept));
    t.push_back(option_row("gamma", "--gamma", &T::gamma, "step: the decay factor")
                    .number_range(0, kInf, true)
                    .idle_with(unless_step_schedule())
                    .on_resume(kept));
    t.push_back(option_row("min_lr", "--min-lr", &T::min_lr, "cosine: the final rate")
                    .number_range(0, kInf)
                    .idle_with(unless_cosine_schedule())
                    .on_resume(kept));
    // The one option a resumed run may change: a longer (or shorter) schedule.
    t.push_back(option_row("total_steps", "--total-steps", &T::total_steps,
                           "Length of the schedule (default: the last step of this run)")
                    .integer_range(1, INT64_MAX)
                    .no_default()
                    .on_resume(OnResume::may_grow));
    t.push_back(option_row("label_smoothing", "--label-smoothing", &T::label_smoothing,
                           "Cross-entropy label smoothing")
                    .number_range(0.0, 1.0)
                    .on_resume(kept));
    return t;
  }();
  return table;
}

void TrainOptions::apply(BackendConfig& bc) const {
  bc.device = device;
  bc.precision = parse_precision(precision);
  bc.layout = parse_compute_layout(compute_layout);
  bc.conv_algorithm = parse_conv_algorithm(conv_algo);
  bc.fusions = parse_fusions(fusions);
  bc.workspace_limit = workspace_limit_mib << 20;
  bc.graph = graph;
  bc.sync_bn = sync_bn;
  bc.bucket_bytes = size_t(bucket_mb * double(1 << 20));
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
  nlohmann::json j = rows_json(train_option_table(), t, true);
  j.update(rows_json(loader_option_table(), l, true));
  j["global_batch"] = l.batch * size_t(world);
  return j;
}

namespace {

// The global batch is the run's (older checkpoints: one process, "batch" is global); on
// `world` ranks each takes global / world.
void restore_global_batch(LoaderOptions& l, const nlohmann::json& j, const std::string& path,
                          const CLI::App& app, int world) {
  const size_t global = j.contains("global_batch") ? j.at("global_batch").get<size_t>()
                        : j.contains("batch")      ? j.at("batch").get<size_t>()
                                                   : LoaderOptions{}.batch;
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
}

}  // namespace

void restore_train_options(TrainOptions& t, LoaderOptions& l, const std::string& config,
                           const std::string& path, const CLI::App& app, int world) {
  try {
    const nlohmann::json j = nlohmann::json::parse(config);
    if (!j.is_object()) fail("{}: the stored run options are not a JSON object", path);
    t.conv_algo = conv_algorithm_name(parse_conv_algorithm(t.conv_algo));  // canonical words
    restore_rows(train_option_table(), t, j, path, app);
    restore_global_batch(l, j, path, app, world);
    restore_rows(loader_option_table(), l, j, path, app);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: the stored run options are not what stoker train writes: {}", path, e.what());
  }
}

}  // namespace stoker
