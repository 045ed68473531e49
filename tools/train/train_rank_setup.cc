// SPDX-License-Identifier: Apache-2.0
// The set-up steps of one rank of `stoker train` (tools/train/train_rank.h), up to the loop's
// configuration.
#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include "common/error.h"
#include "common/interrupt.h"
#include "common/system_info.h"
#include "models/flops.h"
#include "models/shapes.h"
#include "tools/options/option_checks.h"
#include "tools/output_check.h"
#include "tools/setup/class_names.h"
#include "tools/setup/trainer.h"
#include "tools/train/run_checkpoint.h"
#include "tools/train/train_rank.h"
#include "tools/train/train_sizes.h"
#include "tools/tuning_report.h"
#include "train/parallel/collectives.h"
#ifdef STOKER_HAVE_NCCL
#include "train/parallel/collective_nccl.h"
#endif
#include "train/loop_trace.h"
#include "train/trainer_setup.h"

namespace stoker {
namespace {

// GPUs under mpirun: each rank takes device --device + its rank on the node, and the gradients
// go through NCCL between them (the host collective still carries state and votes).
std::unique_ptr<Collective> device_collective(Collective& world, BackendConfig& bc) {
#ifdef STOKER_HAVE_NCCL
  bc.device += mpirun_local_rank();
  return make_device_collective(world, bc.device);
#else
  (void)bc;
  fail(
      "--backend cuda under mpirun ({}) needs NCCL: this stoker was built without it (NCCL is "
      "looked for beside the CUDA toolkit)",
      world.describe());
#endif
}

// Rank 0's weights (and momentum) on every rank: one starting point whatever each loaded.
void broadcast_state(Backend& backend, Collective& world) {
  Checkpoint c = backend.save();
  for (Tensor& t : c.tensors) world.broadcast(t.bytes.data(), t.bytes.size(), 0);
  backend.load(c, "rank 0's initial state");
}

// The trace window, global steps [first, last): --trace-steps, else up to 20 from the start.
void plan_trace_window(TrainRun& run, const TrainCommand& o) {
  if (o.trace.empty()) return;
  run.trace_first = run.state.step;
  run.trace_last = run.state.step + std::min<int64_t>(o.steps > 0 ? o.steps : 20, 20);
  if (!o.trace_steps.empty()) {
    const TraceWindow w = parse_trace_window(o.trace_steps, "train: --trace-steps", "global steps");
    run.trace_first = w.first;
    run.trace_last = w.last;
  }
}

// The loader's batches on this rank, through the backend's memory (decoded on the GPU under
// --decode gpu).
void make_loader_feed(TrainRun& run, const TrainCommand& o) {
  run.gpu_decode.decode_memory = size_t(o.decode_memory_mib) << 20;
  std::optional<TunerLimits> tune;
  if (run.auto_reader) tune = o.loader.tuner_limits();
  run.data = trainer_feed(*run.index, run.lc, *run.backend,
                          Position{uint64_t(run.state.epoch), uint64_t(run.state.sampler_position)},
                          run.gpu_decode, tune);
  if (run.data.tuner && run.rank0) {
    run.data.tuner->on_search = [n = size_t{0}](const TuningSearch& s) mutable {
      fmt::print("{}", tuning_lines(s, ++n));
      std::fflush(stdout);
    };
  }
  run.per_epoch = int64_t(run.data.iterator->batches_per_epoch());
  if (run.per_epoch == 0)
    fail("train: {} has {} images, fewer than one {}batch of {}", o.data, run.index->size(),
         run.world.world() > 1 ? "global " : "", run.global_batch);
  run.feed = &run.data.feed();
  if (run.data.gpu) {
    if (run.rank0)
      fmt::print("# decode: gpu ({}): {}\n", run.decode.reason, run.data.gpu->report().decoder);
  } else if (run.rank0 && parse_decode_mode(o.decode) == DecodeMode::automatic) {
    fmt::print("# decode: cpu ({})\n", run.decode.reason);
  }
}

// A resumed run decodes where it was trained (the checkpoint's decode_device; runs written
// before it was recorded choose again): --decode auto or none takes it, another device is
// refused, as a contradicting kept option is.
void keep_decode_device(TrainCommand& o, const nlohmann::json& stored, const CLI::App& app) {
  if (!stored.contains("decode_device")) return;
  const std::string device = stored.at("decode_device").get<std::string>();
  if (app.count("--decode") > 0 && parse_decode_mode(o.decode) != DecodeMode::automatic &&
      o.decode != device)
    fail(
        "{}: --decode {} contradicts the run being resumed (it was trained on {}-decoded "
        "pixels, which differ); a resumed run keeps its decode device",
        o.resume, o.decode, device);
  o.decode = device;
}

}  // namespace

void check_train_usage(const TrainCommand& o, const CLI::App& app) {
  if (o.no_save && !o.save.empty()) usage_fail("train: --no-save and --save exclude each other");
  if (o.no_save && o.save_every > 0)
    usage_fail("train: --save-every with --no-save: the periodic checkpoints would be saves");
  if (o.save_every < 0)
    usage_fail("train: --save-every {}: expected a number of steps", o.save_every);
  if (o.keep < 1) usage_fail("train: --keep {}: expected at least 1", o.keep);
  if (o.val_every > 0 && o.val.empty()) usage_fail("train: --val-every needs --val DIR");
  if (o.val_every < 0) usage_fail("train: --val-every {}: expected a number of steps", o.val_every);
  if (o.synthetic && o.save_every > 0 && o.save.empty())
    usage_fail(
        "train: --save-every with --synthetic needs --save (the periodic checkpoints are "
        "named after it)");
  if (!o.val.empty()) check_dataset_path(o.val);
  check_val_size(o.val, app);
  if (o.synthetic == !o.data.empty())
    usage_fail("train: give a dataset directory (or list file) or --synthetic, not {}",
               o.synthetic ? "both" : "neither");
  if (!o.init.empty() && !o.resume.empty())
    usage_fail("train: --init and --resume exclude each other");
  // --decode and its sizes under --synthetic or --decode cpu: the idle rules, from their rows
  // (tools/options/command_options.h).
}

void start_run(TrainRun& run, TrainCommand& o, const CLI::App& app) {
  run.resumed = !o.resume.empty();
  if (run.resumed) {
    run.start = load_checkpoint(o.resume);
    run.state = get_run_state(*run.start, o.resume);
    restore_train_options(o.train, o.loader, run.state.config, o.resume, app, run.world.world());
    const nlohmann::json stored = nlohmann::json::parse(run.state.config);
    run.stored_total = stored.at("total_steps").get<int64_t>();
    keep_decode_device(o, stored, app);
    if (stored.contains("core_split")) run.stored_core_split = stored.at("core_split").get<int>();
  } else if (!o.init.empty()) {
    run.start = load_checkpoint(o.init);
  }

  // Every run keeps its work (random tensors teach nothing: --synthetic keeps one if asked).
  // Each rank names it (only rank 0 writes): all agree that there is one.
  // A resumed run writes back to the file it resumed from, unless --save or --no-save says
  // otherwise: `--save F`, `--resume F --epochs 10`, `eval --checkpoint F` evaluates the
  // extended run (issue 47), as one expects of a file one continues.
  run.save_to_resumed = run.resumed && o.save.empty() && !o.no_save;
  if (run.save_to_resumed) o.save = o.resume;
  run.default_save = o.save.empty() && !o.no_save && !o.synthetic;
  if (run.default_save) o.save = default_checkpoint_path(o.train.arch);
  // Every output is checked before the first step: a typo costs a second, not the run.
  if (run.rank0) {
    if (run.default_save)
      check_writable_dir("--save", std::filesystem::path(o.save).parent_path());  // made on saving
    else
      check_writable("--save", o.save);
    check_writable("--json", o.json);
    check_writable("--trace", o.trace);
  }
}

void open_data(TrainRun& run, TrainCommand& o) {
  TrainOptions& t = o.train;
  if (!o.synthetic) {
    run.index = open_index(o.data);
    if (run.rank0) warn_empty_classes(run.index->empty_classes, o.data);
    if (t.classes == 0) t.classes = int(run.index->classes.size());
  }
  if (t.classes == 0) t.classes = 1000;
  // The names of the model's classes: a resumed run's, or this dataset's.
  if (run.resumed) {
    run.class_names = stored_class_names(*run.start, o.resume);
    run.class_names_from = o.resume;
  }
  if (run.class_names && run.index)
    check_class_names("train: --resume", *run.class_names, o.resume, run.index->classes, o.data);
  if (run.index && !run.class_names) {  // a resumed run keeps the names it had (they match)
    run.class_names = run.index->classes;
    run.class_names_from = o.data;
  }
  // Indexed before the backend exists: indexing scans with more threads than the backend
  // later allows TBB (a scan after it would only draw TBB's "limited workers" warning).
  if (!o.val.empty()) {
    run.val_index = open_index(o.val);
    if (run.rank0) warn_empty_classes(run.val_index->empty_classes, o.val);
  }
}

void plan_model(TrainRun& run, TrainCommand& o) {
  const TrainOptions& t = o.train;
  run.net = trainer_network(t);
  if (run.index && int(run.index->classes.size()) > t.classes)
    fail("train: {} has {} classes but the network has {} (--classes)", o.data,
         run.index->classes.size(), t.classes);

  // Random tensors read nothing: the reader is not chosen.
  run.lc = o.synthetic ? o.loader.to_config() : trainer_loader(o.loader, "train");
  // The compute threads are not the reader search's: a backend's sums may differ in their last
  // bits with its thread count, and an auto run must train the bits a fixed reader's does (the
  // split is chosen once, before the first step: tools/train/core_split.h).
  run.auto_reader = !o.synthetic && is_auto_reader(o.loader.reader);
  if (!o.synthetic) {
    run.lc.sampler.rank = uint32_t(run.world.rank());
    run.lc.sampler.world = uint32_t(run.world.world());
    // auto decides by the stored images' size: a few headers read.
    const DecodeMode mode = parse_decode_mode(o.decode);
    const int stored =
        mode == DecodeMode::automatic && run.index ? stored_image_side(*run.index) : 0;
    run.decode =
        choose_decode(mode, run.lc, o.train.backend, backend_caps(o.train.backend), stored);
    run.lc.decode_device = run.decode.device;
    run.lc.decode_arena = size_t(o.decode_arena_mib) << 20;
  }
  run.batch = int64_t(o.loader.batch);
  run.global_batch = run.batch * run.world.world();
  // Under a size schedule the backend is planned for the first step's size; the loop re-plans
  // it whenever a batch's size differs (Backend::reshape).
  run.bc = trainer_backend_config(t, run.lc, run.batch, uint64_t(run.state.epoch),
                                  uint64_t(run.state.step));
  run.height = run.bc.height;
  run.width = run.bc.width;
  const std::vector<ActShape> shapes = infer_shapes(run.net, run.height, run.width);
  run.flop_per_image = trained_image_flops(forward_cost(run.net, shapes));
  plan_trace_window(run, o);
}

void make_trainer(TrainRun& run, TrainCommand& o) {
  TrainOptions& t = o.train;
  BackendConfig& bc = run.bc;
  t.conv_algo = conv_algorithm_name(bc.conv_algorithm);  // stored canonical
  bc.record_activity = !o.no_gaps || !o.trace.empty();
  if (run.world.world() > 1) bc.collective = &run.world;
  // A device backend all-reduces in its own memory: through NCCL.
  if (run.world.world() > 1 && backend_caps(t.backend).device) {
    run.gpus = device_collective(run.world, bc);
    bc.collective = run.gpus.get();
  }
  run.backend = trainer_backend(t, run.net, bc, run.start ? &*run.start : nullptr,
                                o.resume.empty() ? o.init : o.resume, run.lc.sampler.seed);
  if (run.world.world() > 1) broadcast_state(*run.backend, run.world);

  if (o.synthetic) {
    // In the backend's memory (pinned for a device), as a loader's batches are.
    run.synthetic_feed = std::make_unique<SyntheticFeed>(
        run.batch, run.height, run.width, t.classes, run.lc.sampler.seed, bc.input.dtype,
        run.backend->host_memory());
    run.feed = run.synthetic_feed.get();
  } else {
    make_loader_feed(run, o);
  }
}

// This run's steps and the schedule's length. A fresh run: --steps (default --epochs of the
// data), a schedule of --total-steps (default: this run). A resumed run: to the stored
// schedule's end, unless --total-steps or --epochs (the whole run's) changes that end.
void plan_schedule(TrainRun& run, TrainCommand& o, const CLI::App& app) {
  TrainOptions& t = o.train;
  const RunState& state = run.state;
  int64_t steps = o.steps;
  int64_t schedule_steps = t.total_steps;
  if (app.count("--steps") > 0 && steps < 1)
    fail("train: --steps {} given, expected at least 1", steps);
  if (app.count("--epochs") > 0 && o.epochs < 1)
    fail("train: --epochs {} given, expected at least 1", o.epochs);
  if (app.count("--total-steps") > 0 && schedule_steps < 1)
    fail("train: --total-steps {} given, expected at least 1", schedule_steps);
  if (app.count("--total-steps") == 0 && app.count("--epochs") > 0 && run.resumed) {
    if (o.synthetic) fail("train: --epochs with --synthetic data: give --total-steps");
    schedule_steps = run.per_epoch * o.epochs;
  }
  if (run.resumed && app.count("--total-steps") > 0 && schedule_steps <= state.step)
    usage_fail("train: --total-steps {} ends before the run in {}, at step {}: give more",
               schedule_steps, o.resume, state.step);
  if (steps == 0) {
    if (!run.resumed) {
      steps = o.synthetic ? 20 : run.per_epoch * std::max(1, o.epochs);
    } else if (schedule_steps <= state.step) {
      fail(
          "train: the run in {} is complete ({} of {} steps); --total-steps or --epochs "
          "extends its schedule",
          o.resume, state.step, schedule_steps);
    } else {
      steps = schedule_steps - state.step;
    }
  }
  if (schedule_steps == 0) schedule_steps = state.step + steps;
  if (state.step + steps > schedule_steps)
    usage_fail(
        "train: steps {}..{} go past the end of the learning-rate schedule ({} steps); "
        "--total-steps or --epochs sets a longer one",
        state.step, state.step + steps, schedule_steps);
  if (run.resumed && schedule_steps != run.stored_total)
    run.schedule_change = fmt::format(
        "# resume: the schedule is now {} steps, not {} (--{}); the rates from step {} on "
        "follow the new one\n",
        schedule_steps, run.stored_total, app.count("--total-steps") > 0 ? "total-steps" : "epochs",
        state.step);
  t.total_steps = schedule_steps;
  t.resolve_defaults(schedule_steps);
  if (parse_lr_kind(t.schedule_kind) == LrSchedule::Kind::cosine && t.lr_warmup >= schedule_steps)
    fail("train: --lr-warmup {} leaves nothing of a cosine schedule of {} steps", t.lr_warmup,
         schedule_steps);
  run.steps = steps;
  run.schedule_steps = schedule_steps;
}

namespace {

// The ranks' vote after a step: one count per signal, so that every rank learns which one
// stops the job (SIGTERM, a scheduler's, over SIGINT) and exits as if it had got it.
int agree_stop(Collective& world, int here) {
  float votes[2] = {here == SIGINT ? 1.0f : 0.0f, here == SIGTERM ? 1.0f : 0.0f};
  world.allreduce_sum(votes, 2);
  const int agreed = votes[1] > 0 ? SIGTERM : votes[0] > 0 ? SIGINT : 0;
  if (agreed != 0 && here == 0) {
    adopt_interrupt(agreed);
    std::fprintf(stderr, "stoker train: rank %d of %d: stopping with the others (signal %d)\n",
                 world.rank(), world.world(), agreed);
  }
  return agreed;
}

}  // namespace

void make_loop_config(TrainRun& run, const TrainCommand& o) {
  // The rate scaled by the global batch.
  run.loop = trainer_loop(o.train, run.state.step, run.steps, run.schedule_steps, run.global_batch,
                          o.warmup);
  LoopConfig& loop = run.loop;
  loop.progress = run.rank0;
  if (run.world.world() > 1)
    loop.agree_stop = [&world = run.world](int here) { return agree_stop(world, here); };
  loop.label = fmt::format("train {}", run.net.name);
  loop.activity = run.bc.record_activity;
  loop.trace_begin = run.trace_first;
  loop.trace_end = run.trace_last;
}

}  // namespace stoker
