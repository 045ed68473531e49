// SPDX-License-Identifier: Apache-2.0
// The one trainer set-up that `stoker train`, `eval`, `study` and train's --val call, each
// step written once: the network, the backend's configuration (the loader's batches and the
// compute options), the backend with its initial weights, the loader with its one reader, the
// feed a loop pulls from (the loader's batches, decoded on the GPU under `decode_device gpu`),
// and the loop's configuration. What a trainer computes comes from TrainOptions (a study
// cell's are the defaults). Built on train/trainer_setup.h's pieces. Not the loop
// (train/train_loop.h), nor what one caller alone needs (checkpoints, collectives, hooks).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loader/index/index.h"
#include "loader/iterator.h"
#include "loader/tuning/reader_tuner.h"
#include "models/network.h"
#include "tools/options/loader_options.h"
#include "tools/setup/train_options.h"
#include "train/backend.h"
#include "train/checkpoint.h"
#include "train/gpu_decode.h"
#include "train/loader_feed.h"
#include "train/train_loop.h"

namespace stoker {

// The network `t` names: t.arch with t.classes outputs (t.zero_init_residual).
Network trainer_network(const TrainOptions& t);

// The backend's configuration: planned for `loader`'s batches of `batch` images at the size
// of global step `step` of `epoch` (train/trainer_setup.h, backend_config), with t's compute
// options (threads, precision, layout, algorithms, label smoothing, ...).
BackendConfig trainer_backend_config(const TrainOptions& t, const LoaderConfig& loader,
                                     int64_t batch, uint64_t epoch = 0, uint64_t step = 0);

// The backend t.backend for `net`, configured by `bc`, holding its initial weights: `start`'s
// (weights, and momentum if present; `from` names it in errors) or, without one, the
// initialisation of `seed` (init_checkpoint).
std::unique_ptr<Backend> trainer_backend(const TrainOptions& t, const Network& net,
                                         const BackendConfig& bc, const Checkpoint* start,
                                         const std::string& from, uint64_t seed);

// A command that runs one reader (train, eval): registers every loader option but `except`,
// --reader defaulting to default_reader().
void add_trainer_loader_options(CLI::App& app, LoaderOptions& l,
                                const std::vector<std::string>& except);
// The loader's configuration with its one reader; `who` names the command in errors. Under
// --reader auto, the first candidate's (serial): the tuner switches from there.
LoaderConfig trainer_loader(const LoaderOptions& l, const char* who);

// The loader's batches as a training loop or an evaluation pass pulls them, destroyed in
// reverse order (the GPU decode feed, the loader's feed, then the iterator), all before the
// backend.
struct TrainerFeed {
  std::unique_ptr<Iterator> iterator;  // `loader`'s batches in the backend's memory
  std::unique_ptr<ReaderTuner> tuner;  // --reader auto: chooses `iterator`'s reader
  std::unique_ptr<LoaderFeed> loader;  // from a position (a resumed run's)
  std::unique_ptr<GpuDecodeFeed> gpu;  // decode_device gpu: `loader`'s decoded on the GPU
  // What the loop pulls: `gpu`, else `loader`.
  BatchFeed& feed() const;
};
// Short last batches dropped (the backend is planned for one batch size); the caller checks
// that an epoch holds a batch (iterator->batches_per_epoch()). With `tune` (--reader auto),
// a ReaderTuner over reader_candidates(online cpus, loader.prefetch) chooses the reader from
// the first step (loader.reader: the first candidate).
TrainerFeed trainer_feed(const Index& index, const LoaderConfig& loader, Backend& backend,
                         Position from, const GpuDecodeOptions& gpu = {},
                         const std::optional<TunerLimits>& tune = std::nullopt);
// The same feed for one evaluation pass (evaluate, setup/evaluate.h): every sample once from
// the epoch's start, the short last batch kept (count below the batch: the consumer pads it),
// no tuner. In the backend's memory and, under `decode_device gpu`, decoded into its device
// stage, as a training feed's.
TrainerFeed evaluation_feed(const Index& index, const LoaderConfig& loader, Backend& backend,
                            const GpuDecodeOptions& gpu = {});

// The loop over `steps` global steps from `first_step`, `images_per_step` images each: t's
// optimiser, and its learning-rate schedule over `schedule_steps` steps (t's "auto" defaults
// resolved for that length), the first `warmup` steps (at most steps - 1) left out of
// the figures. The caller adds what is its own (label, progress, trace window, activity,
// hooks).
LoopConfig trainer_loop(const TrainOptions& t, int64_t first_step, int64_t steps,
                        int64_t schedule_steps, int64_t images_per_step, int64_t warmup);

}  // namespace stoker
