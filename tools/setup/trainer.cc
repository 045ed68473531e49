// SPDX-License-Identifier: Apache-2.0
#include "tools/setup/trainer.h"

#include <algorithm>
#include <utility>

#include "common/system_info.h"
#include "loader/tuning/tuning_candidates.h"
#include "models/resnet.h"
#include "train/trainer_setup.h"

namespace stoker {

Network trainer_network(const TrainOptions& t) {
  ResNetConfig rc = parse_resnet_arch(t.arch);
  rc.num_classes = t.classes;
  rc.zero_init_residual = t.zero_init_residual;
  return build_resnet(rc);
}

BackendConfig trainer_backend_config(const TrainOptions& t, const LoaderConfig& loader,
                                     int64_t batch, uint64_t epoch, uint64_t step) {
  BackendConfig bc = backend_config(loader, batch, t.threads, epoch, step);
  bc.label_smoothing = t.label_smoothing;
  t.apply(bc);
  return bc;
}

std::unique_ptr<Backend> trainer_backend(const TrainOptions& t, const Network& net,
                                         const BackendConfig& bc, const Checkpoint* start,
                                         const std::string& from, uint64_t seed) {
  std::unique_ptr<Backend> backend = make_backend(t.backend, net, bc);
  if (start != nullptr) {
    backend->load(*start, from);
  } else {
    backend->load(init_checkpoint(net, seed), "the initialisation");
  }
  return backend;
}

void add_trainer_loader_options(CLI::App& app, LoaderOptions& l,
                                const std::vector<std::string>& except) {
  l.reader = default_reader();
  l.add_to(app, except);
}

LoaderConfig trainer_loader(const LoaderOptions& l, const char* who) {
  LoaderConfig c = l.to_config();
  c.reader = is_auto_reader(l.reader) ? auto_start_reader(online_cpus()) : l.one_reader(who);
  return c;
}

BatchFeed& TrainerFeed::feed() const {
  if (gpu) return *gpu;
  return *loader;
}

namespace {

// The feed over `iterator` (training's or evaluation's over `loader`, in the backend's
// memory): the tuner, the loader's feed from `from`, and GPU decode into the backend's device
// stage.
TrainerFeed feed_over(std::unique_ptr<Iterator> iterator, const LoaderConfig& loader,
                      Backend& backend, Position from, const GpuDecodeOptions& gpu,
                      const std::optional<TunerLimits>& tune) {
  TrainerFeed f;
  f.iterator = std::move(iterator);
  if (tune)
    f.tuner = std::make_unique<ReaderTuner>(
        *f.iterator, reader_candidates(online_cpus(), loader.prefetch), *tune);
  f.loader = std::make_unique<LoaderFeed>(*f.iterator, from, f.tuner.get());
  if (loader.decode_device == DecodeDevice::gpu)
    f.gpu = make_gpu_decode_feed(*f.loader, backend, gpu);
  return f;
}

}  // namespace

TrainerFeed trainer_feed(const Index& index, const LoaderConfig& loader, Backend& backend,
                         Position from, const GpuDecodeOptions& gpu,
                         const std::optional<TunerLimits>& tune) {
  return feed_over(training_iterator(index, loader, backend), loader, backend, from, gpu, tune);
}

TrainerFeed evaluation_feed(const Index& index, const LoaderConfig& loader, Backend& backend,
                            const GpuDecodeOptions& gpu) {
  return feed_over(evaluation_iterator(index, loader, backend), loader, backend, Position{0, 0},
                   gpu, std::nullopt);
}

LoopConfig trainer_loop(const TrainOptions& t, int64_t first_step, int64_t steps,
                        int64_t schedule_steps, int64_t images_per_step, int64_t warmup) {
  TrainOptions resolved = t;
  resolved.resolve_defaults(schedule_steps);
  LoopConfig loop;
  loop.steps = steps;
  loop.first_step = first_step;
  loop.sgd = resolved.sgd();
  loop.schedule = resolved.schedule(images_per_step, schedule_steps);
  loop.images_per_step = images_per_step;
  loop.warmup = std::clamp<int64_t>(warmup, 0, std::max<int64_t>(0, steps - 1));
  return loop;
}

}  // namespace stoker
