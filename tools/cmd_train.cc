// SPDX-License-Identifier: Apache-2.0
// stoker train: ResNet training on a backend (oneDNN on the CPU), fed by the loader (any
// reader) or by random tensors (--synthetic, compute alone). Starts from a fresh
// initialisation, --init (weights, and momentum if present) or --resume (the whole run
// state: weights, momentum, step, sampler position, options); runs exactly --steps steps;
// a checkpoint is written at the end (and on Ctrl-C, of the last finished step) to --save or,
// by default, a new file under runs/ (--no-save: none), --save-every more on the way, --val
// measures top-1/top-5 on the way. `#` context lines, a live progress line on stderr, then a
// summary table; --json writes every step's timings and loss.
//
// Under mpirun every rank runs this with its shard of the data (loader/sampler.h) and the
// backend averages the gradients (train/collective.h); rank 0 alone writes checkpoints, the
// JSON, the trace and the console view, and any rank's error ends the whole job.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "common/error.h"
#include "common/interrupt.h"
#include "common/stats.h"
#include "common/system_info.h"
#include "loader/index.h"
#include "loader/iterator.h"
#include "loader/loader_stats.h"
#include "models/flops.h"
#include "models/resnet.h"
#include "models/shapes.h"
#include "tools/class_names.h"
#include "tools/commands.h"
#include "tools/evaluate.h"
#include "tools/json_document.h"
#include "tools/loader_options.h"
#include "tools/option_checks.h"
#include "tools/output_check.h"
#include "tools/run_checkpoint.h"
#include "tools/train_options.h"
#include "tools/train_sizes.h"
#include "train/backend.h"
#include "train/checkpoint.h"
#include "train/dist/collectives.h"
#ifdef STOKER_HAVE_NCCL
#include "train/dist/collective_nccl.h"
#endif
#include "train/loader_feed.h"
#include "train/loop_trace.h"
#include "train/train_loop.h"
#include "train/trainer_setup.h"

namespace stoker {
namespace {

struct TrainCommand {
  std::string data;
  bool synthetic = false;
  std::string reader;
  std::string init, resume, save, json;
  int64_t steps = 0;
  int epochs = 0;
  int64_t timing_warmup = 2;
  bool no_gaps = false;
  bool no_save = false;
  std::string trace, trace_steps;
  int64_t save_every = 0;
  int keep = 2;
  std::string val;
  int64_t val_every = 0;
  int val_size = 0;  // --val-size: evaluation's side (0: the training size, or the schedule's max)
  int val_resize = 0;  // --val-resize: the short side before the centre crop (0: 256/224 of it)
  TrainOptions train;  // what the run computes: restored from a checkpoint on --resume
  LoaderOptions loader;
};

// --save-every's files: `<save without .safetensors>-step<N>.safetensors`, N zero-padded so
// that names sort as steps do.
std::string periodic_name(const std::string& save, int64_t step) {
  std::string stem = save;
  if (stem.ends_with(".safetensors")) stem.resize(stem.size() - std::string(".safetensors").size());
  return fmt::format("{}-step{:08d}.safetensors", stem, step);
}

// Removes all but the `keep` newest periodic checkpoints of `save` (any run's: a resumed run
// continues the same series). Only names periodic_name makes are touched.
void prune_periodic(const std::string& save, int keep) {
  namespace fs = std::filesystem;
  const std::string pattern = fs::path(periodic_name(save, 0)).filename().string();
  const std::string head = pattern.substr(0, pattern.size() - 8 - 12);  // "...-step"
  const fs::path dir = fs::path(save).parent_path().empty() ? "." : fs::path(save).parent_path();
  std::vector<std::pair<int64_t, fs::path>> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with(head) || !name.ends_with(".safetensors")) continue;
    const std::string digits = name.substr(head.size(), name.size() - head.size() - 12);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    found.emplace_back(std::stoll(digits), e.path());
  }
  std::sort(found.begin(), found.end());
  for (size_t k = 0; k + size_t(keep) < found.size(); ++k) fs::remove(found[k].second, ec);
}

nlohmann::json ms_stats(const std::vector<double>& seconds) {
  double sum = 0;
  for (double s : seconds) sum += s;
  return {{"median", 1e3 * median(seconds)},
          {"p10", 1e3 * quantile(seconds, 0.1)},
          {"p90", 1e3 * quantile(seconds, 0.9)},
          {"mean", seconds.empty() ? 0.0 : 1e3 * sum / double(seconds.size())}};
}

// An interrupt every rank agreed on (LoopConfig::agree_stop) after the same step: the job
// ends in order, with no abort.
struct StoppedTogether : Interrupted {
  using Interrupted::Interrupted;
};

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

void train_rank(TrainCommand& o, const CLI::App& app, Collective& world) {
  const bool rank0 = world.rank() == 0;
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
  // Random tensors have no loader: its options would be silently ignored.
  if (o.synthetic)
    for (const char* opt :
         {"--reader", "--epochs", "--prefetch", "--transform", "--flip", "--no-shuffle",
          "--on-error", "--max-pixels", "--no-dct-scaling", "--no-partial-decode", "--direct",
          "--shard-order", "--shuffle-buffer", "--source", "--null-file", "--size-schedule"})
      if (app.count(opt) > 0)
        usage_fail("train: {} means nothing with --synthetic (random tensors, no loader)", opt);

  // The run's state and options: fresh, or restored from --resume.
  RunState state;
  std::optional<Checkpoint> start;
  const bool resumed = !o.resume.empty();
  int64_t stored_total = 0;  // the resumed run's schedule length
  if (resumed) {
    start = load_checkpoint(o.resume);
    state = get_run_state(*start, o.resume);
    restore_train_options(o.train, o.loader, state.config, o.resume, app, world.world());
    stored_total = nlohmann::json::parse(state.config).at("total_steps").get<int64_t>();
  } else if (!o.init.empty()) {
    start = load_checkpoint(o.init);
  }
  TrainOptions& t = o.train;

  // Every run keeps its work (random tensors teach nothing: --synthetic keeps one if asked).
  // Each rank names it (only rank 0 writes): all agree that there is one.
  const bool default_save = o.save.empty() && !o.no_save && !o.synthetic;
  if (default_save) o.save = default_checkpoint_path(t.arch);
  // Every output is checked before the first step: a typo costs a second, not the run.
  if (rank0) {
    if (default_save)
      check_writable_dir("--save", std::filesystem::path(o.save).parent_path());  // made on saving
    else
      check_writable("--save", o.save);
    check_writable("--json", o.json);
    check_writable("--trace", o.trace);
  }

  std::optional<Index> index;
  if (!o.synthetic) {
    index = open_index(o.data);
    if (t.classes == 0) t.classes = int(index->classes.size());
  }
  if (t.classes == 0) t.classes = 1000;
  // The names of the model's classes: a resumed run's, or this dataset's.
  std::optional<std::vector<std::string>> class_names;
  std::string class_names_from;
  if (resumed) {
    class_names = stored_class_names(*start, o.resume);
    class_names_from = o.resume;
  }
  if (class_names && index)
    check_class_names("train: --resume", *class_names, o.resume, index->classes, o.data);
  if (index && !class_names) {  // a resumed run keeps the names it had (they match)
    class_names = index->classes;
    class_names_from = o.data;
  }
  // Indexed before the backend exists: indexing scans with more threads than the backend
  // later allows TBB (a scan after it would only draw TBB's "limited workers" warning).
  std::optional<Index> val_index;
  if (!o.val.empty()) val_index = open_index(o.val);
  ResNetConfig rc = parse_resnet_arch(t.arch);
  rc.num_classes = t.classes;
  rc.zero_init_residual = t.zero_init_residual;
  const Network net = build_resnet(rc);
  if (index && int(index->classes.size()) > t.classes)
    fail("train: {} has {} classes but the network has {} (--classes)", o.data,
         index->classes.size(), t.classes);

  LoaderConfig lc = o.loader.to_config();
  if (!o.synthetic) {
    lc.reader =
        parse_reader(o.reader.empty() ? fmt::format("threads:{}", online_cpus()) : o.reader);
    lc.sampler.rank = uint32_t(world.rank());
    lc.sampler.world = uint32_t(world.world());
  }
  const int64_t batch = int64_t(o.loader.batch);  // per rank
  const int64_t global_batch = batch * world.world();
  // Under a size schedule the backend is planned for the first step's size; the loop re-plans
  // it whenever a batch's size differs (Backend::reshape).
  BackendConfig bc =
      backend_config(lc, batch, t.threads, uint64_t(state.epoch), uint64_t(state.step));
  const int64_t height = bc.height, width = bc.width;
  const std::vector<ActShape> shapes = infer_shapes(net, height, width);
  const double flop_per_image = trained_image_flops(forward_cost(net, shapes));

  // The trace window, global steps [first, last).
  int64_t trace_first = 0, trace_last = 0;
  if (!o.trace.empty()) {
    trace_first = state.step;
    trace_last = state.step + std::min<int64_t>(o.steps > 0 ? o.steps : 20, 20);
    if (!o.trace_steps.empty()) {
      const TraceWindow w =
          parse_trace_window(o.trace_steps, "train: --trace-steps", "global steps");
      trace_first = w.first;
      trace_last = w.last;
    }
  }

  // The compute options on top of the loader's input format and size.
  bc.label_smoothing = t.label_smoothing;
  t.apply(bc);
  t.conv_algo = bc.conv_algorithm;  // stored canonical
  bc.record_activity = !o.no_gaps || !o.trace.empty();
  std::unique_ptr<Collective> gpus;  // outlives the backend
  if (world.world() > 1) bc.collective = &world;
  if (world.world() > 1 && t.backend == "cuda") {
    gpus = device_collective(world, bc);
    bc.collective = gpus.get();
  }
  std::unique_ptr<Backend> backend = make_backend(t.backend, net, bc);
  if (start) {
    backend->load(*start, o.resume.empty() ? o.init : o.resume);
  } else {
    backend->load(init_checkpoint(net, lc.sampler.seed), "the initialisation");
  }
  if (world.world() > 1) broadcast_state(*backend, world);

  std::unique_ptr<Iterator> iterator;
  std::unique_ptr<BatchFeed> feed;
  LoaderFeed* loader_feed = nullptr;
  int64_t per_epoch = 0;  // synthetic data has no epochs
  if (o.synthetic) {
    // In the backend's memory (pinned for a device), as a loader's batches are.
    feed = std::make_unique<SyntheticFeed>(batch, height, width, t.classes, lc.sampler.seed,
                                           bc.input.type, backend->host_memory());
  } else {
    iterator = training_iterator(*index, lc, *backend);
    per_epoch = int64_t(iterator->batches_per_epoch());
    if (per_epoch == 0)
      fail("train: {} has {} images, fewer than one {}batch of {}", o.data, index->size(),
           world.world() > 1 ? "global " : "", global_batch);
    auto f = std::make_unique<LoaderFeed>(
        *iterator, Position{uint64_t(state.epoch), uint64_t(state.sampler_position)});
    loader_feed = f.get();
    feed = std::move(f);
  }

  // This run's steps and the schedule's length. A fresh run: --steps (default --epochs of the
  // data), a schedule of --total-steps (default: this run). A resumed run: to the stored
  // schedule's end, unless --total-steps or --epochs (the whole run's) changes that end.
  int64_t steps = o.steps;
  int64_t schedule_steps = t.total_steps;
  std::string schedule_change;
  if (app.count("--steps") > 0 && steps < 1)
    fail("train: --steps {} given, expected at least 1", steps);
  if (app.count("--epochs") > 0 && o.epochs < 1)
    fail("train: --epochs {} given, expected at least 1", o.epochs);
  if (app.count("--total-steps") > 0 && schedule_steps < 1)
    fail("train: --total-steps {} given, expected at least 1", schedule_steps);
  if (app.count("--total-steps") == 0 && app.count("--epochs") > 0 && resumed) {
    if (o.synthetic) fail("train: --epochs with --synthetic data: give --total-steps");
    schedule_steps = per_epoch * o.epochs;
  }
  if (resumed && app.count("--total-steps") > 0 && schedule_steps <= state.step)
    usage_fail("train: --total-steps {} ends before the run in {}, at step {}: give more",
               schedule_steps, o.resume, state.step);
  if (steps == 0) {
    if (!resumed) {
      steps = o.synthetic ? 20 : per_epoch * std::max(1, o.epochs);
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
  if (resumed && schedule_steps != stored_total)
    schedule_change = fmt::format(
        "# resume: the schedule is now {} steps, not {} (--{}); the rates from step {} on "
        "follow the new one\n",
        schedule_steps, stored_total, app.count("--total-steps") > 0 ? "total-steps" : "epochs",
        state.step);
  t.total_steps = schedule_steps;
  t.resolve_defaults(schedule_steps);
  if (parse_lr_kind(t.schedule_kind) == LrSchedule::Kind::cosine && t.lr_warmup >= schedule_steps)
    fail("train: --lr-warmup {} leaves nothing of a cosine schedule of {} steps", t.lr_warmup,
         schedule_steps);

  LoopConfig loop;
  loop.steps = steps;
  loop.first_step = state.step;
  loop.sgd = t.sgd();
  loop.schedule = t.schedule(global_batch, schedule_steps);  // scaled by the global batch
  loop.images_per_step = global_batch;
  loop.progress = rank0;
  if (world.world() > 1)
    loop.agree_stop = [&world](bool here) {
      float votes = here ? 1.0f : 0.0f;
      world.allreduce_sum(&votes, 1);
      return votes > 0;
    };
  loop.label = fmt::format("train {}", net.name);
  loop.timing_warmup = std::clamp<int64_t>(o.timing_warmup, 0, steps - 1);
  loop.activity = bc.record_activity;
  loop.trace_begin = trace_first;
  loop.trace_end = trace_last;

  fmt::print("# stoker train {} (built {})\n", STOKER_VERSION, __DATE__);
  fmt::print("# machine: {}, {} cores, Linux {}\n", cpu_model(), online_cpus(), kernel_release());
  fmt::print("# backend: {}\n", backend->describe());
  if (world.world() > 1)
    fmt::print("# data parallel: {}, batch {} per rank, global batch {}\n", world.describe(), batch,
               global_batch);
  fmt::print(
      "# model: {} ({} classes), {}x{} (HxW) input{}, batch {}, {:.2f} GFLOP per trained image\n",
      net.name, t.classes, height, width,
      lc.size_schedule.active() ? fmt::format(" first, size schedule {}", lc.size_schedule.text())
                                : "",
      global_batch, flop_per_image / 1e9);
  fmt::print("# data: {}\n",
             o.synthetic ? "synthetic (random tensors drawn once: compute alone)"
                         : fmt::format("{} ({} images, {} classes), reader {}, transform {}, {}",
                                       o.data, index->size(), index->classes.size(),
                                       lc.reader.text(), transform_name(lc.transform.kind),
                                       lc.sampler.shuffle ? "shuffled" : "fixed order"));
  fmt::print(
      "# optimiser: SGD lr {:.4g} ({}{}), momentum {}, {}weight decay {}{}, label "
      "smoothing {}\n",
      loop.schedule.base_lr, t.schedule_kind,
      t.lr_warmup ? fmt::format(", {} warm-up steps", t.lr_warmup) : "", t.momentum,
      t.nesterov ? "Nesterov, " : "", t.weight_decay, t.bn_decay ? "" : " (not on BN and biases)",
      t.label_smoothing);
  fmt::print("# run: steps {}..{} of {}{}\n", state.step, state.step + steps, schedule_steps,
             start ? fmt::format(", from {}", o.resume.empty() ? o.init : o.resume) : "");
  fmt::print("{}", schedule_change);
  if (!o.save.empty())
    fmt::print("# save: {} at the end and on Ctrl-C{}\n", o.save,
               default_save ? " (--save chooses the file, --no-save keeps none)" : "");
  else
    fmt::print("# save: none ({})\n",
               o.no_save ? "--no-save" : "--synthetic keeps none unless --save names one");

  // Where the run is after `done` global steps (between steps: the feed has handed out
  // exactly their batches), and a checkpoint of it.
  const auto run_state_at = [&](int64_t done) {
    RunState s = state;
    s.step = done;
    s.seed = lc.sampler.seed;
    s.config = train_options_json(o.train, o.loader, world.world()).dump();
    if (loader_feed != nullptr) {
      s.epoch = int64_t(loader_feed->position().epoch);
      s.sampler_position = int64_t(loader_feed->position().index);
    }
    return s;
  };
  const auto save_at = [&](const std::string& path, int64_t done) {
    Checkpoint ckpt = backend->save();  // on every rank: a backend may gather state for it
    if (!rank0) return;
    const RunState s = run_state_at(done);
    set_run_state(ckpt, s);
    if (class_names) store_class_names(ckpt, *class_names);
    if (default_save)
      std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    save_checkpoint(path, ckpt);
    fmt::print("# checkpoint: {} (step {}, epoch {}, sample {})\n", path, s.step, s.epoch,
               s.sampler_position);
  };

  // --val: the evaluation transform on the validation set, with this run's backend.
  LoaderConfig val_lc;
  nlohmann::json val_json = nlohmann::json::array();
  if (!o.val.empty()) {
    if (class_names)  // names first: they say more than a count
      check_class_names("train: --val", *class_names, class_names_from, val_index->classes, o.val);
    if (int(val_index->classes.size()) > t.classes)
      fail("train: --val {} has {} classes but the network has {}", o.val,
           val_index->classes.size(), t.classes);
    val_lc = val_config(o.loader, lc.size_schedule, o.val_size, o.val_resize);
    val_lc.reader = lc.reader;
    val_lc.sampler.drop_last = false;
    val_lc.memory = loader_memory(*backend);
    fmt::print("# val: {}, centre crop {}x{} of the short side resized to {}\n", o.val,
               val_lc.transform.out_height(), val_lc.transform.out_width(),
               val_lc.transform.resize);
  }
  const auto validate = [&](int64_t done) {
    const EvalResult r =
        evaluate(*backend, *val_index, val_lc, t.classes, batch, "val", /*progress=*/false);
    fmt::print("# val: step {}: top-1 {:.2f}%, top-5 {:.2f}%, loss {:.4f} ({} images{})\n", done,
               100 * r.top1, 100 * r.top5, r.loss, r.images, r.interrupted ? ", interrupted" : "");
    std::fflush(stdout);
    val_json.push_back({{"step", done},
                        {"images", r.images},
                        {"top1", r.top1},
                        {"top5", r.top5},
                        {"loss", r.loss},
                        {"interrupted", r.interrupted}});
  };
  int64_t last_val = -1;
  if (o.save_every > 0 || o.val_every > 0) {
    loop.hook_every = std::gcd(o.save_every, o.val_every);
    loop.hook = [&](int64_t done) {
      if (o.save_every > 0 && done % o.save_every == 0) {
        save_at(periodic_name(o.save, done), done);
        if (rank0) prune_periodic(o.save, o.keep);
      }
      // Validation on rank 0 alone, over the whole set: the others wait at the next step.
      if (rank0 && o.val_every > 0 && done % o.val_every == 0) {
        validate(done);
        last_val = done;
      }
    };
  }
  std::fflush(stdout);  // the context survives a redirect even if the run is cut short

  const LoopResult result = train_loop(*backend, *feed, loop);
  const std::vector<StepRecord>& records = result.records;
  const int64_t done = state.step + int64_t(records.size());
  if (rank0 && !o.val.empty() && last_val != done && !result.interrupted) validate(done);

  // Steady state: the first steps pay for first touches of memory and caches.
  const size_t skip = std::min(size_t(loop.timing_warmup), records.size() - 1);
  std::vector<double> wait, stage, fwd, bwd, upd, total;
  double timed = 0, timed_wait = 0, timed_stage = 0, timed_fwd = 0, timed_bwd = 0, timed_upd = 0;
  for (size_t k = skip; k < records.size(); ++k) {
    const StepRecord& r = records[k];
    wait.push_back(r.wait);
    stage.push_back(r.stage);
    fwd.push_back(r.forward);
    bwd.push_back(r.backward);
    upd.push_back(r.update);
    total.push_back(r.total);
    timed += r.total;
    timed_wait += r.wait;
    timed_stage += r.stage;
    timed_fwd += r.forward;
    timed_bwd += r.backward;
    timed_upd += r.update;
  }
  // Every rank's images: the job's throughput (each rank's steps are the same steps).
  const double images_per_s = double(global_batch) * double(total.size()) / timed;
  // Under a size schedule the work per image changes: the timed steps' mean.
  const std::vector<SizeCost> per_size =
      cost_per_size(records, skip, height, width, global_batch, net);
  const double timed_flop_per_image = mean_flop_per_image(per_size);
  const GapStats& gaps = result.gaps;
  fmt::print("{:>8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>8} {:>10}\n", "steps",
             "img/s", "step ms", "wait ms", "fwd ms", "bwd ms", "upd ms", "wait %", "gap %",
             "GFLOP/s", "loss");
  fmt::print(
      "{:>8} {:>8.2f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>7.1f} {:>7} {:>8.1f} "
      "{:>10.4f}\n",
      total.size(), images_per_s, 1e3 * median(total), 1e3 * median(wait), 1e3 * median(fwd),
      1e3 * median(bwd), 1e3 * median(upd), 100 * timed_wait / timed,
      loop.activity ? fmt::format("{:.1f}", 100 * gaps.share()) : "-",
      images_per_s * timed_flop_per_image / 1e9, records.back().loss);
  if (per_size.size() > 1) print_per_size(per_size);
  if (rank0 && !o.trace.empty()) {
    const TraceWriter tw = loop_trace(result.trace, t.backend);
    tw.write(o.trace);
    fmt::print("# trace: {} (steps {}..{}, {} events)\n", o.trace, trace_first, trace_last,
               tw.events());
  }

  const RunState end = run_state_at(done);
  // Which data each rank trained on: its epoch's chained batch checksum (every rank takes
  // part; rank 0 writes them), stoker.Loader(rank=, world_size=)'s for the same shard. Not
  // after an interrupt: a collective then would wait with the signal pending and stop the
  // job before rank 0 saves.
  nlohmann::json data_checksums = nullptr;
  if (iterator && !result.interrupted) {
    std::vector<std::string> sums;
    for (int r = 0; r < world.world(); ++r) {
      uint64_t v = world.rank() == r ? iterator->epoch_checksum() : 0;
      if (world.world() > 1) world.broadcast(&v, sizeof v, r);
      sums.push_back(hex64(v));
    }
    data_checksums = {{"epoch", end.epoch}, {"ranks", sums}};
  }
  if (result.interrupted)
    fmt::print("# interrupted: {} of {} steps done; the figures above cover them\n", records.size(),
               steps);
  if (!o.save.empty()) save_at(o.save, done);
  if (rank0 && !o.json.empty()) {
    nlohmann::json steps_json = nlohmann::json::array();
    std::vector<float> losses;
    std::vector<double> lrs;
    for (const StepRecord& r : records) {
      losses.push_back(r.loss);
      lrs.push_back(r.lr);
      steps_json.push_back({{"height", r.height > 0 ? r.height : height},
                            {"width", r.width > 0 ? r.width : width},
                            {"reshape_s", r.reshape},
                            {"wait_s", r.wait},
                            {"stage_s", r.stage},
                            {"forward_s", r.forward},
                            {"backward_s", r.backward},
                            {"update_s", r.update},
                            {"allreduce_wait_s", r.allreduce_wait},
                            {"total_s", r.total}});
      if (loop.activity)
        steps_json.back().update({{"busy_s", r.busy},
                                  {"gap_s", r.gap},
                                  {"gaps", r.gaps},
                                  {"longest_gap_s", r.longest_gap},
                                  {"gap_during_wait_s", r.gap_during_wait}});
    }
    nlohmann::json algos = nlohmann::json::array();
    for (const ConvChoice& a : backend->algorithms())
      algos.push_back({{"layer", a.layer},
                       {"pass", a.pass},
                       {"algorithm", a.algorithm},
                       {"workspace_bytes", a.workspace_bytes},
                       {"measured_ms", a.measured_ms}});
    nlohmann::json gaps_json = nullptr;
    if (loop.activity) {
      const Histogram& h = gaps.histogram;
      gaps_json = {{"window_s", 1e-9 * double(gaps.window_ns)},
                   {"busy_s", 1e-9 * double(gaps.busy_ns)},
                   {"gap_s", 1e-9 * double(gaps.gap_ns)},
                   {"share", gaps.share()},
                   {"count", gaps.gaps},
                   {"longest_ms", 1e-6 * double(gaps.longest_ns)},
                   {"during_data_wait_s", 1e-9 * double(gaps.during_wait_ns)},
                   {"gap_us",
                    {{"p50", 1e-3 * h.quantile_ns(0.5)},
                     {"p90", 1e-3 * h.quantile_ns(0.9)},
                     {"p99", 1e-3 * h.quantile_ns(0.99)},
                     {"max", 1e-3 * h.quantile_ns(1.0)},
                     {"mean", 1e-3 * h.mean_ns()}}}};
    }
    const DeviceReport dev = backend->device_report();
    nlohmann::json device_json = nullptr;
    if (dev.device)
      device_json = {{"planned_bytes", dev.planned_bytes},
                     {"peak_in_use_bytes", dev.peak_in_use_bytes},
                     {"total_bytes", dev.total_bytes},
                     {"activity_records_lost", dev.activity_lost}};
    const nlohmann::json doc = {
        {"tool", "stoker train"},
        {"version", STOKER_VERSION},
        {"machine", {{"cpu", cpu_model()}, {"cores", online_cpus()}, {"kernel", kernel_release()}}},
        {"backend", backend->describe()},
        {"arch", net.name},
        {"classes", t.classes},
        {"precision", t.precision},
        {"conv_algo", t.conv_algo},
        {"threads", bc.threads},
        {"batch", batch},
        {"global_batch", global_batch},
        {"world", world.world()},
        {"collective", world.describe()},
        {"image_size", width},
        {"image_height", height},
        {"size_schedule", lc.size_schedule.text()},
        {"per_size", per_size_json(per_size)},
        {"synthetic", o.synthetic},
        {"data", o.data},
        {"reader", o.synthetic ? "" : lc.reader.text()},
        {"first_step", state.step},
        {"steps", int64_t(records.size())},
        {"planned_steps", steps},
        {"interrupted", result.interrupted},
        {"validation", val_json},
        {"timing_warmup", skip},
        {"images_per_s", images_per_s},
        {"flop_per_image", timed_flop_per_image},
        {"achieved_gflop_per_s", images_per_s * timed_flop_per_image / 1e9},
        {"data_wait_fraction", timed_wait / timed},
        {"totals_s",
         {{"wall", timed},
          {"data_wait", timed_wait},
          {"stage", timed_stage},
          {"forward", timed_fwd},
          {"backward", timed_bwd},
          {"update", timed_upd}}},
        {"input", bc.input.type == InputType::u8 ? "u8" : "f32"},
        {"gaps", gaps_json},
        {"device_memory", device_json},
        {"conv_algorithms", algos},
        {"step_ms", ms_stats(total)},
        {"data_wait_ms", ms_stats(wait)},
        {"stage_ms", ms_stats(stage)},
        {"forward_ms", ms_stats(fwd)},
        {"backward_ms", ms_stats(bwd)},
        {"update_ms", ms_stats(upd)},
        {"loss", losses},
        {"lr", lrs},
        {"per_step", steps_json},
        {"checkpoint", o.save},
        {"data_checksums", data_checksums},
        {"end_state",
         {{"step", end.step}, {"epoch", end.epoch}, {"sampler_position", end.sampler_position}}},
        {"options", nlohmann::json::parse(end.config)}};
    std::ofstream out(o.json);
    out << context_and_result(
               doc, {"tool",         "version",   "machine",    "backend",       "arch",
                     "classes",      "precision", "conv_algo",  "threads",       "batch",
                     "global_batch", "world",     "collective", "image_size",    "synthetic",
                     "data",         "reader",    "input",      "timing_warmup", "options"})
               .dump(2)
        << "\n";
    if (!out) fail("train: cannot write {}", o.json);
  }
  std::fflush(stdout);
  // A hint names a file only once it exists.
  const std::string resume_hint =
      o.save.empty() ? (o.no_save ? "; nothing was saved (--no-save)" : "")
                     : fmt::format("; `stoker train {} --resume {}` continues it exactly",
                                   o.synthetic ? "--synthetic" : o.data, o.save);
  if (result.interrupted && world.world() > 1) {
    world.barrier();  // rank 0's checkpoint is written before any rank leaves
    throw StoppedTogether(fmt::format("train: interrupted after step {}{}", done, resume_hint));
  }
  if (result.interrupted)
    throw Interrupted(fmt::format("train: interrupted after step {}{}", done, resume_hint));
}

// One rank's failure ends the job: its error goes to stderr naming the rank, then MPI_Abort
// stops every other rank (mpirun sends them SIGTERM, which ends a wait in a collective as
// "stopped"), so nobody waits forever for a peer that is gone.
void run_train(TrainCommand& o, const CLI::App& app) {
  install_interrupt_handlers();
  std::unique_ptr<Collective> world = make_host_collective();
  if (world->world() == 1) return train_rank(o, app, *world);
  // Rank 0 speaks for the job; the others keep stdout quiet (errors go to stderr).
  if (world->rank() != 0) {
    std::fflush(stdout);
    if (std::freopen("/dev/null", "w", stdout) == nullptr) fail("cannot open /dev/null");
  }
  const std::string who = fmt::format("stoker train: rank {} of {}", world->rank(), world->world());
  int code = 0;
  try {
    train_rank(o, app, *world);
    return;
  } catch (const StoppedTogether&) {
    throw;  // main() says it and exits 128 + signal; MPI finalises as `world` goes
  } catch (const Interrupted& e) {
    std::fprintf(stderr, "%s: stopped: %s\n", who.c_str(), e.what());
    code = interrupt_exit_code() != 0 ? interrupt_exit_code() : 1;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: usage error: %s\n", who.c_str(), e.what());
    code = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", who.c_str(), e.what());
    code = 1;
  }
  world->abort(code);
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto o = std::make_shared<TrainCommand>();
  o->loader.batch = 32;
  CLI::App* cmd = app.add_subcommand("train", "Train a ResNet on a dataset or synthetic data");
  cmd->add_option("data", o->data,
                  "Dataset: ImageFolder root, list file, packed shards or nfs:// URL");
  cmd->add_flag("--synthetic", o->synthetic, "Random tensors instead of a dataset: compute alone");
  cmd->add_option("--reader", o->reader,
                  "serial, threads:N, processes:N, uring:QD[:T] (default threads:<cores>)")
      ->check(parsed_by([](const std::string& s) { parse_reader(s); }, "READER"));
  cmd->add_option("--steps", o->steps,
                  "Optimiser steps to run (default: --epochs of the data; synthetic: 20; "
                  "--resume: to the end of the schedule)")
      ->check(integer_in(1, INT64_MAX));
  cmd->add_option("--epochs", o->epochs,
                  "Epochs to run when --steps is not given (default 1); with --resume, the "
                  "whole run's length in epochs (extends its schedule)")
      ->check(integer_in(1, 1u << 20));
  cmd->add_option("--init", o->init,
                  "Start from this checkpoint's weights (and momentum if it has them)");
  cmd->add_option("--resume", o->resume,
                  "Continue the run saved in this checkpoint: weights, momentum, step, sampler "
                  "position, options");
  cmd->add_option("--save", o->save,
                  "Write the checkpoint here at the end, or on Ctrl-C of the last finished step "
                  "(atomically; default: a new runs/<arch>-<date>-<time>.safetensors, printed "
                  "at the start; --synthetic: none)");
  cmd->add_flag("--no-save", o->no_save, "Keep no checkpoint of this run");
  cmd->add_option("--save-every", o->save_every,
                  "Also checkpoint every N global steps, to <save>-step<N>.safetensors");
  cmd->add_option("--keep", o->keep, "--save-every: keep the newest K of those checkpoints")
      ->capture_default_str();
  cmd->add_option("--val", o->val,
                  "Validation set (ImageFolder root or list file): top-1/top-5 at the end, and "
                  "every --val-every steps");
  cmd->add_option("--val-every", o->val_every, "Validate every N global steps (needs --val)");
  add_val_size_options(*cmd, o->val_size, o->val_resize);
  cmd->add_option("--json", o->json, "Write the summary and every step's timings here");
  cmd->add_option("--timing-warmup", o->timing_warmup, "Steps left out of the steady-state figures")
      ->capture_default_str()
      ->check(integer_in(0, INT64_MAX));
  cmd->add_flag("--no-gaps", o->no_gaps,
                "Do not time each primitive / kernel (no gap statistics in the summary)");
  cmd->add_option("--trace", o->trace,
                  "Write a Chrome trace-event JSON (Perfetto) of the --trace-steps window here");
  cmd->add_option("--trace-steps", o->trace_steps,
                  "A:B, the global steps [A, B) to trace (default: the first 20 of this run)")
      ->check(parsed_by([](const std::string& s) { parse_trace_window(s, "", "global steps"); },
                        "A:B"));
  o->train.add_to(*cmd);
  // A step needs decoded images, and the backend is planned for whole batches.
  o->loader.add_to(*cmd, kAllLoaderOptions & ~(kNoDecode | kDropLast));
  // Under mpirun --batch is each rank's, as in PyTorch DDP; the global batch is ranks x it.
  if (CLI::Option* b = cmd->get_option_no_throw("--batch"))
    b->description(b->get_description() + " (per rank under mpirun: global batch = ranks x it)");
  cmd->callback([o, cmd] { run_train(*o, *cmd); });
}

}  // namespace stoker
