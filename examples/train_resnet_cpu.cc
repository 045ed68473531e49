// SPDX-License-Identifier: Apache-2.0
// The library path end to end, as a user outside Stoker writes it: index a dataset, pull
// batches from an iterator, plan a backend for them, and run a few SGD steps by hand. Not the
// `stoker train` command (tools/train/cmd_train.cc adds checkpoints, schedules, metrics, data
// parallelism) and not a benchmark.
//
//   train_resnet_cpu DATA [STEPS]      DATA: an ImageFolder tree (`stoker gen DATA`)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "common/error.h"
#include "loader/index/index.h"
#include "loader/iterator.h"
#include "models/resnet.h"
#include "train/backend.h"
#include "train/checkpoint.h"
#include "train/trainer_setup.h"

namespace {

int run(const char* data, int steps) {
  using namespace stoker;
  // 1. The index: every sample's file and label, read once.
  const Index index = open_index(data);

  // 2. What the loader produces: 8 random-resized crops of 32 px a step, f32 NCHW,
  //    read and decoded by 2 threads.
  LoaderConfig loader;
  loader.reader = parse_reader("threads:2");
  loader.sampler.batch_size = 8;
  loader.sampler.seed = 1;
  loader.transform.size = 32;

  // 3. The model and a backend planned for those batches: ResNet-18, oneDNN on the CPU,
  //    weights initialised as torchvision does (from the seed).
  ResNetConfig arch = parse_resnet_arch("resnet18");
  arch.num_classes = static_cast<int>(index.classes.size());
  const Network net = build_resnet(arch);
  const BackendConfig config = backend_config(loader, loader.sampler.batch_size, /*threads=*/2);
  std::unique_ptr<Backend> backend = make_backend("cpu", net, config);
  backend->load(init_checkpoint(net, loader.sampler.seed), "the initialisation");

  // 4. The iterator, collating into the backend's memory (pinned, for a GPU).
  std::unique_ptr<Iterator> batches = training_iterator(index, loader, *backend);
  batches->start_epoch(0);

  // 5. The loop: stage -> forward_backward -> update, then collect the losses. Nothing here
  //    waits for the compute engine except collect().
  const SgdConfig sgd;  // momentum 0.9, weight decay 1e-4, as torchvision's recipe
  for (int step = 0; step < steps; ++step) {
    const Batch* b = batches->next();
    if (b == nullptr) {  // the epoch ended: start the next one
      batches->start_epoch(batches->position().epoch + 1);
      b = batches->next();
      if (b == nullptr) fail("'{}' holds fewer images than one batch", data);
    }
    backend->stage({b->data, b->labels.data(), int64_t(b->size), b->spec.height, b->spec.width});
    backend->forward_backward();
    backend->update(sgd, /*lr=*/0.05f);
    backend->release_input();  // the loader may reuse the batch's buffer from here on
    for (const StepResult& r : backend->collect()) {
      std::printf("step %d  loss %.4f  (%.1f ms forward, %.1f ms backward)\n", step, r.loss,
                  1e3 * r.times.forward, 1e3 * r.times.backward);
      if (!std::isfinite(r.loss)) fail("step {}: the loss is not finite", step);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s DATA [STEPS]\n", argv[0]);
    return 2;
  }
  try {
    return run(argv[1], argc == 3 ? std::atoi(argv[2]) : 2);
  } catch (const stoker::Error& e) {
    std::fprintf(stderr, "train_resnet_cpu: %s\n", e.what());
    return 1;
  }
}
