// SPDX-License-Identifier: Apache-2.0
// One rank of `stoker train` as named steps over one plain struct (TrainRun): check the
// options, start or restore the run, open the data, plan the model and the backend (the
// trainer set-up, train/trainer_setup.h), plan the schedule, print the context, run the loop
// with its hooks (periodic checkpoints, --val), then report (table, trace, JSON) and save.
// The command line itself (options, mpirun's ranks, exit codes) is tools/train/cmd_train.cc.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "loader/index/index.h"
#include "loader/iterator.h"
#include "loader/tuning/reader_tuner.h"
#include "models/network.h"
#include "tools/options/loader_options.h"
#include "tools/setup/train_options.h"
#include "tools/setup/trainer.h"
#include "tools/train/decode_choice.h"
#include "train/backend.h"
#include "train/checkpoint.h"
#include "train/collective.h"
#include "train/gpu_decode.h"
#include "train/loader_feed.h"
#include "train/train_loop.h"

namespace stoker {

struct TrainCommand {
  std::string data;
  bool synthetic = false;
  std::string init, resume, save, json;
  int64_t steps = 0;
  int epochs = 0;
  int64_t warmup = 2;  // --warmup (--timing-warmup, its older name)
  bool no_gaps = false;
  bool no_save = false;
  std::string trace, trace_steps;
  int64_t save_every = 0;
  int keep = 2;
  std::string val;
  int64_t val_every = 0;
  int val_size = 0;  // --val-size: evaluation's side (0: the training size, or the schedule's max)
  int val_resize = 0;  // --val-resize: the short side before the centre crop (0: 256/224 of it)
  std::string decode = "cpu";        // --decode cpu|gpu|auto (tools/train/decode_choice.h)
  int64_t decode_arena_mib = 0;      // --decode-arena (0: half a MiB per image)
  int64_t decode_memory_mib = 1024;  // --decode-memory
  TrainOptions train;  // what the run computes: restored from a checkpoint on --resume
  LoaderOptions loader;
};

// What one rank's steps share, in the order they fill it (members are destroyed in reverse:
// the feed and iterator before the backend, the backend before its collective and network).
struct TrainRun {
  explicit TrainRun(Collective& w) : world(w), rank0(w.rank() == 0) {}
  Collective& world;
  const bool rank0;
  // start_run: the run's state and options, fresh or restored from --resume.
  RunState state;
  std::optional<Checkpoint> start;
  bool resumed = false;
  int64_t stored_total = 0;      // the resumed run's schedule length
  bool default_save = false;     // --save is runs/<arch>-<time>.safetensors, named here
  bool save_to_resumed = false;  // --save is the --resume file (neither --save nor --no-save)
  // open_data: the datasets and the model's class names.
  std::optional<Index> index, val_index;
  std::optional<std::vector<std::string>> class_names;
  std::string class_names_from;
  // plan_model: the network, the loader, the backend's configuration (tools/setup/trainer.h).
  Network net;
  LoaderConfig lc;
  bool auto_reader = false;  // --reader auto: run.data.tuner chooses lc.reader while it runs
  int64_t batch = 0, global_batch = 0;  // per rank, and over every rank
  BackendConfig bc;
  int64_t height = 0, width = 0;  // the first step's
  // split_cores (tools/train/core_split.h): --reader auto's search of the CPU trainer's
  // compute threads, and the count it chose or a resumed run kept (0: not chosen: --threads
  // or the runtime's default), which the checkpoint records (core_split).
  std::optional<TuningSearch> core_split;
  int core_split_threads = 0;
  std::string core_split_skipped;  // why auto did not search it ("": it did, or not auto)
  int stored_core_split = 0;       // start_run: the resumed run's (0: none recorded)
  double flop_per_image = 0;
  int64_t trace_first = 0, trace_last = 0;  // the trace window, global steps [first, last)
  // make_trainer: the backend and what feeds it: the loader's batches (decoded on the GPU
  // under --decode gpu: the choice and its reason, tools/train/decode_choice.h), or --synthetic's.
  std::unique_ptr<Collective> gpus;  // outlives the backend
  std::unique_ptr<Backend> backend;
  TrainerFeed data;                           // empty with --synthetic
  std::unique_ptr<BatchFeed> synthetic_feed;  // --synthetic
  BatchFeed* feed = nullptr;                  // what the loop pulls: one of the two
  DecodeChoice decode;
  GpuDecodeOptions gpu_decode;  // --decode-memory, for the training feed's and --val's decoder
  // The loop's process CPU time and wall time (every thread: the loader's, the host's).
  double loop_cpu_s = 0, loop_wall_s = 0;
  int64_t per_epoch = 0;  // synthetic data has no epochs
  // plan_schedule: this run's steps and the learning-rate schedule's length.
  int64_t steps = 0, schedule_steps = 0;
  std::string schedule_change;  // the `#` line saying a resume changed the schedule
  LoopConfig loop;
  // add_hooks: the validation loader and its results.
  LoaderConfig val_lc;
  nlohmann::json val_json = nlohmann::json::array();
  int64_t last_val = -1;
};

// The steps, in order (tools/train/train_rank_setup.cc).
void check_train_usage(const TrainCommand& o, const CLI::App& app);
void start_run(TrainRun& run, TrainCommand& o, const CLI::App& app);
void open_data(TrainRun& run, TrainCommand& o);
void plan_model(TrainRun& run, TrainCommand& o);
// split_cores(run, o, app): tools/train/core_split.h
void make_trainer(TrainRun& run, TrainCommand& o);
void plan_schedule(TrainRun& run, TrainCommand& o, const CLI::App& app);
void make_loop_config(TrainRun& run, const TrainCommand& o);

// What a run prints and writes (tools/train/train_rank_report.cc).
void print_context(const TrainRun& run, const TrainCommand& o);
// The summary table after the loop (and the per-size table under a size schedule).
void print_summary(const TrainRun& run, const LoopResult& result);
void write_trace(const TrainRun& run, const TrainCommand& o, const LoopResult& result);
// Each rank's epoch checksum (every rank takes part), null after an interrupt.
nlohmann::json data_checksums(const TrainRun& run, const LoopResult& result, int64_t epoch);
void write_train_json(const TrainRun& run, const TrainCommand& o, const LoopResult& result,
                      const RunState& end, const nlohmann::json& checksums);

}  // namespace stoker
