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
// Under mpirun every rank runs this with its shard of the data (loader/sampler/sampler.h) and the
// backend averages the gradients (train/collective.h); rank 0 alone writes checkpoints, the
// JSON, the trace and the console view, and any rank's error ends the whole job.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>

#include "common/clock.h"
#include "common/error.h"
#include "common/interrupt.h"
#include "common/system_info.h"
#include "tools/commands.h"
#include "tools/options/command_options.h"
#include "tools/options/loader_options.h"
#include "tools/options/option_checks.h"
#include "tools/setup/class_names.h"
#include "tools/setup/evaluate.h"
#include "tools/setup/train_options.h"
#include "tools/setup/trainer.h"
#include "tools/train/core_split.h"
#include "tools/train/decode_choice.h"
#include "tools/train/run_checkpoint.h"
#include "tools/train/train_rank.h"
#include "tools/train/train_sizes.h"
#include "train/checkpoint.h"
#include "train/loop_trace.h"
#include "train/parallel/collectives.h"

namespace stoker {
namespace {

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

// An interrupt every rank agreed on (LoopConfig::agree_stop) after the same step: the job
// ends in order, with no abort.
struct StoppedTogether : Interrupted {
  using Interrupted::Interrupted;
};

// Where the run is after `done` global steps (between steps: the feed has handed out exactly
// their batches).
RunState run_state_at(const TrainRun& run, const TrainCommand& o, int64_t done) {
  RunState s = run.state;
  s.step = done;
  s.seed = run.lc.sampler.seed;
  nlohmann::json config = train_options_json(o.train, o.loader, run.world.world());
  // The decode device is the run's, chosen once before its first step (--decode auto
  // included): GPU decode's pixels differ from the CPU's, so --resume keeps it.
  if (!o.synthetic)
    config["decode_device"] = run.decode.device == DecodeDevice::gpu ? "gpu" : "cpu";
  // So is --reader auto's core split (the compute threads' sums may differ in their last bits).
  if (run.core_split_threads > 0) config["core_split"] = run.core_split_threads;
  s.config = config.dump();
  if (run.data.loader) {
    s.epoch = int64_t(run.data.loader->position().epoch);
    s.sampler_position = int64_t(run.data.loader->position().index);
  }
  return s;
}

// A checkpoint of the run after `done` global steps at `path` (rank 0 writes it).
void save_at(const TrainRun& run, const TrainCommand& o, const std::string& path, int64_t done) {
  Checkpoint ckpt = run.backend->save();  // on every rank: a backend may gather state for it
  if (!run.rank0) return;
  const RunState s = run_state_at(run, o, done);
  set_run_state(ckpt, s);
  if (run.class_names) store_class_names(ckpt, *run.class_names);
  if (run.default_save)
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  save_checkpoint(path, ckpt);
  fmt::print("# checkpoint: {} (step {}, epoch {}, sample {})\n", path, s.step, s.epoch,
             s.sampler_position);
}

// --val: the evaluation transform on the validation set, with this run's backend.
void plan_validation(TrainRun& run, const TrainCommand& o) {
  if (o.val.empty()) return;
  const Index& val = *run.val_index;
  const int classes = o.train.classes;
  if (run.class_names)  // names first: they say more than a count
    check_class_names("train: --val", *run.class_names, run.class_names_from, val.classes, o.val);
  if (int(val.classes.size()) > classes)
    fail("train: --val {} has {} classes but the network has {}", o.val, val.classes.size(),
         classes);
  // --reader auto tunes the training loader; validation reads with the default reader.
  LoaderOptions vo = o.loader;
  if (is_auto_reader(vo.reader)) vo.reader = default_reader();
  run.val_lc = evaluation_loader(vo, "train", run.lc.size_schedule, o.val_size, o.val_resize);
  // Decoded where the training batches are (--decode): the feed is the training set-up's.
  run.val_lc.decode_device = run.lc.decode_device;
  run.val_lc.decode_arena = run.lc.decode_arena;
  fmt::print("# val: {}, centre crop {}x{} of the short side resized to {}\n", o.val,
             run.val_lc.transform.out_height(), run.val_lc.transform.out_width(),
             run.val_lc.transform.resize);
}

void validate(TrainRun& run, const TrainCommand& o, int64_t done) {
  const EvalResult r = evaluate(*run.backend, *run.val_index, run.val_lc, o.train.classes,
                                run.batch, "val", /*progress=*/false, run.gpu_decode);
  fmt::print("# val: step {}: top-1 {:.2f}%, top-5 {:.2f}%, loss {:.4f} ({} images{})\n", done,
             100 * r.top1, 100 * r.top5, r.loss, r.images, r.interrupted ? ", interrupted" : "");
  std::fflush(stdout);
  run.val_json.push_back({{"step", done},
                          {"images", r.images},
                          {"top1", r.top1},
                          {"top5", r.top5},
                          {"loss", r.loss},
                          {"interrupted", r.interrupted}});
  run.last_val = done;
}

// Between steps: periodic checkpoints (--save-every) and validation (--val-every).
void add_hooks(TrainRun& run, const TrainCommand& o) {
  if (o.save_every <= 0 && o.val_every <= 0) return;
  run.loop.hook_every = std::gcd(o.save_every, o.val_every);
  run.loop.hook = [&run, &o](int64_t done) {
    if (o.save_every > 0 && done % o.save_every == 0) {
      save_at(run, o, periodic_name(o.save, done), done);
      if (run.rank0) prune_periodic(o.save, o.keep);
    }
    // Validation on rank 0 alone, over the whole set: the others wait at the next step.
    if (run.rank0 && o.val_every > 0 && done % o.val_every == 0) validate(run, o, done);
    // The time spent here is not the step's: --reader auto must not judge a reader by it.
    if (run.data.tuner) run.data.tuner->not_a_step();
  };
}

// After an interrupt: the job ends in order once rank 0's checkpoint is written, with a
// hint that names a file only once it exists.
void end_interrupted(const TrainRun& run, const TrainCommand& o, int64_t done) {
  const std::string resume_hint =
      o.save.empty() ? (o.no_save ? "; nothing was saved (--no-save)" : "")
                     : fmt::format("; `stoker train {} --resume {}` continues it exactly",
                                   o.synthetic ? "--synthetic" : o.data, o.save);
  if (run.world.world() > 1) {
    run.world.barrier();  // rank 0's checkpoint is written before any rank leaves
    throw StoppedTogether(fmt::format("train: interrupted after step {}{}", done, resume_hint));
  }
  throw Interrupted(fmt::format("train: interrupted after step {}{}", done, resume_hint));
}

// The run itself, from its options to its end.
void run_rank(TrainRun& run, TrainCommand& o, const CLI::App& app) {
  check_train_usage(o, app);
  start_run(run, o, app);
  open_data(run, o);
  plan_model(run, o);
  split_cores(run, o, app);
  make_trainer(run, o);
  plan_schedule(run, o, app);
  make_loop_config(run, o);
  print_context(run, o);
  plan_validation(run, o);
  add_hooks(run, o);
  std::fflush(stdout);  // the context survives a redirect even if the run is cut short

  const double cpu0 = process_cpu_seconds();
  const int64_t wall0 = now_ns();
  const LoopResult result = train_loop(*run.backend, *run.feed, run.loop);
  run.loop_cpu_s = process_cpu_seconds() - cpu0;
  run.loop_wall_s = double(now_ns() - wall0) * 1e-9;
  const int64_t done = run.state.step + int64_t(result.records.size());
  if (run.rank0 && !o.val.empty() && run.last_val != done && !result.interrupted)
    validate(run, o, done);
  print_summary(run, result);
  write_trace(run, o, result);
  const RunState end = run_state_at(run, o, done);
  const nlohmann::json checksums = data_checksums(run, result, end.epoch);
  if (result.interrupted)
    fmt::print("# interrupted: {} of {} steps done; the figures above cover them\n",
               result.records.size(), run.steps);
  if (!o.save.empty()) save_at(run, o, o.save, done);
  write_train_json(run, o, result, end, checksums);
  std::fflush(stdout);
  if (result.interrupted) end_interrupted(run, o, done);
}

// One rank's failure ends the job: its error goes to stderr naming the rank, then MPI_Abort
// stops every other rank (mpirun sends them SIGTERM, which ends a wait in a collective as
// "stopped"), so nobody waits forever for a peer that is gone.
[[noreturn]] void end_rank(Collective& world, const std::exception_ptr& error) {
  const std::string who = fmt::format("stoker train: rank {} of {}", world.rank(), world.world());
  int code = 1;
  try {
    std::rethrow_exception(error);
  } catch (const Interrupted& e) {
    std::fprintf(stderr, "%s: stopped: %s\n", who.c_str(), e.what());
    code = interrupt_exit_code() != 0 ? interrupt_exit_code() : 1;
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: usage error: %s\n", who.c_str(), e.what());
    code = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", who.c_str(), e.what());
  } catch (...) {
    std::fprintf(stderr, "%s: error: an exception of unknown type\n", who.c_str());
  }
  world.abort(code);
  std::_Exit(code);  // not reached: abort() ends the process
}

// A rank of a job ends it from inside this frame, with `run` still allocated: an all-reduce in
// flight when the error came (the gradient buckets of a step) may still write into the memory
// `run` owns until MPI_Abort ends the process (issue 36, train/collective.h).
void train_rank(TrainCommand& o, const CLI::App& app, Collective& world) {
  TrainRun run(world);
  try {
    run_rank(run, o, app);
  } catch (const StoppedTogether&) {
    throw;  // main() says it and exits 128 + signal; MPI finalises as `world` goes
  } catch (...) {
    if (world.world() == 1) throw;
    end_rank(world, std::current_exception());
  }
}

void run_train(TrainCommand& o, const CLI::App& app) {
  install_interrupt_handlers();
  std::unique_ptr<Collective> world = make_host_collective("stoker train");
  // Rank 0 speaks for the job; the others keep stdout quiet (errors go to stderr).
  if (world->world() > 1 && world->rank() != 0) {
    std::fflush(stdout);
    if (std::freopen("/dev/null", "w", stdout) == nullptr) fail("cannot open /dev/null");
  }
  train_rank(o, app, *world);
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto o = std::make_shared<TrainCommand>();
  o->loader.batch = 32;
  CLI::App* cmd = app.add_subcommand("train", "Train a ResNet on a dataset or synthetic data");
  cmd->add_option("data", o->data,
                  "Dataset: ImageFolder root, list file, packed shards or nfs:// URL");
  cmd->add_flag("--synthetic", o->synthetic, "Random tensors instead of a dataset: compute alone");
  add_command_option(*cmd, "--steps", o->steps,
                     {.help = "Optimiser steps to run (default: --epochs of the data; synthetic: "
                              "20; --resume: to the end of the schedule)",
                      .show_default = false});
  add_command_option(*cmd, "--epochs", o->epochs,
                     {.help = "Epochs to run when --steps is not given (default 1); with "
                              "--resume, the whole run's length in epochs (extends its schedule)",
                      .show_default = false});
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
  add_command_option(*cmd, "--json", o->json, {"Write the summary and every step's timings here"});
  // --warmup is the word bench and study use; --timing-warmup, the older one, is still taken.
  add_command_option(*cmd, "--warmup", o->warmup,
                     {"Steps left out of the steady-state figures (--timing-warmup: the older "
                      "name, deprecated)"});
  cmd->add_flag("--no-gaps", o->no_gaps,
                "Do not time each primitive / kernel (no gap statistics in the summary)");
  add_command_option(
      *cmd, "--trace", o->trace,
      {"Write a Chrome trace-event JSON (Perfetto) of the --trace-steps window here"});
  cmd->add_option("--trace-steps", o->trace_steps,
                  "A:B, the global steps [A, B) to trace (default: the first 20 of this run)")
      ->check(parsed_by([](const std::string& s) { parse_trace_window(s, "", "global steps"); },
                        "A:B"));
  add_command_option(*cmd, "--decode", o->decode,
                     {"Where images are decoded: cpu; gpu (nvJPEG's hardware engine or hybrid "
                      "backend, the crop window alone; resize and normalise on the GPU; the CPU "
                      "reads, parses and plans crops); auto (gpu where the stored images are "
                      "above 512 px, with the cuda backend: where the CPU falls short)"});
  add_command_option(*cmd, "--decode-arena", o->decode_arena_mib,
                     {"--decode gpu: MiB of file data a batch may hold (default: half a MiB per "
                      "image); a file that does not fit is decoded by the CPU, counted"});
  add_command_option(*cmd, "--decode-memory", o->decode_memory_mib,
                     {"--decode gpu: MiB of GPU memory for decoded crop windows; a batch needing "
                      "more is decoded in parts"});
  o->train.add_to(*cmd);
  // A step needs decoded images, and the backend is planned for whole batches.
  add_trainer_loader_options(*cmd, o->loader, {"--no-decode", "--drop-last"});
  // Under mpirun --batch is each rank's, as in PyTorch DDP; the global batch is ranks x it.
  if (CLI::Option* b = cmd->get_option_no_throw("--batch"))
    b->description(b->get_description() + " (per rank under mpirun: global batch = ranks x it)");
  cmd->callback([o, cmd] { run_train(*o, *cmd); });
}

}  // namespace stoker
