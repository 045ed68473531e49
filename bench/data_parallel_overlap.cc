// SPDX-License-Identifier: Apache-2.0
// How much of the gradient all-reduce the CPU backend hides behind the backward, for
// docs/PERFORMANCE.md: run under mpirun, STEPS steps of a ResNet on random data with buckets
// of BUCKET_MB (overlapped) and with one bucket holding every gradient (started only when the
// backward ends: nothing hidden), medians of the backward, the exposed wait and the step.
// Not a test (timings on a shared machine).
// Usage: data_parallel_overlap ARCH SIZE PER_RANK_BATCH STEPS BUCKET_MB THREADS
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "models/resnet.h"
#include "train/backend.h"
#include "train/checkpoint.h"
#include "train/parallel/collectives.h"

namespace stoker {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Figures {
  double backward = 0, wait = 0, step = 0;
};

Figures measure(const Network& net, Collective* coll, int64_t size, int64_t batch, int steps,
                size_t bucket_bytes, int threads) {
  BackendConfig bc;
  bc.batch = batch;
  bc.height = bc.width = size;
  bc.threads = threads;
  bc.collective = coll;
  bc.bucket_bytes = bucket_bytes;
  auto b = make_backend("cpu", net, bc);
  b->load(init_checkpoint(net, 1), "init");
  std::mt19937 rng(uint32_t(coll->rank() + 1));
  std::normal_distribution<float> normal;
  std::vector<float> images(size_t(batch * 3 * size * size));
  for (float& x : images) x = normal(rng);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (int32_t& l : labels) l = int32_t(rng() % uint32_t(net.num_classes));
  std::vector<double> bwd, wait, step;
  const SgdConfig sgd;
  for (int k = 0; k < steps; ++k) {
    coll->barrier();
    const auto t0 = std::chrono::steady_clock::now();
    b->stage({images.data(), labels.data(), batch});
    b->forward_backward();
    b->update(sgd, 0.01f);
    const std::vector<StepResult> r = b->collect();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (k < 2) continue;  // first touches
    bwd.push_back(r.back().times.backward);
    wait.push_back(r.back().times.allreduce_wait);
    step.push_back(s);
  }
  return {median(bwd), median(wait), median(step)};
}

int run(int argc, char** argv) {
  if (argc != 7) {
    fmt::print(stderr, "usage: {} ARCH SIZE PER_RANK_BATCH STEPS BUCKET_MB THREADS\n", argv[0]);
    return 2;
  }
  ResNetConfig rc = parse_resnet_arch(argv[1]);
  rc.num_classes = 1000;
  const Network net = build_resnet(rc);
  const int64_t size = std::stoll(argv[2]), batch = std::stoll(argv[3]);
  const int steps = std::stoi(argv[4]), threads = std::stoi(argv[6]);
  const size_t bucket = size_t(std::stod(argv[5]) * double(1 << 20));
  std::unique_ptr<Collective> coll = make_host_collective();
  if (coll->world() < 2) fail("run under mpirun with 2 or more ranks");
  size_t grad_bytes = 0;
  for (const Param& p : net.params)
    if (p.trainable) grad_bytes += size_t(shape_numel(p.shape)) * sizeof(float);
  const Figures overlap = measure(net, coll.get(), size, batch, steps, bucket, threads);
  const Figures serial = measure(net, coll.get(), size, batch, steps, size_t(1) << 40, threads);
  if (coll->rank() == 0) {
    fmt::print("{} {}x{} batch {}/rank, {} ranks, {} thread(s)/rank, {:.1f} MB of gradients, {}\n",
               net.name, size, size, batch, coll->world(), threads, grad_bytes / 1e6,
               coll->describe());
    fmt::print("{:<26} {:>9} {:>9} {:>9}\n", "buckets", "bwd ms", "wait ms", "step ms");
    fmt::print("{:<26} {:>9.1f} {:>9.1f} {:>9.1f}\n", fmt::format("{} MB (overlapped)", argv[5]),
               1e3 * overlap.backward, 1e3 * overlap.wait, 1e3 * overlap.step);
    fmt::print("{:<26} {:>9.1f} {:>9.1f} {:>9.1f}\n", "one, after the backward",
               1e3 * serial.backward, 1e3 * serial.wait, 1e3 * serial.step);
    fmt::print("hidden share of the all-reduce: {:.0f}% (1 - exposed wait / serial wait)\n",
               100 * (1 - overlap.wait / std::max(serial.wait, 1e-9)));
  }
  coll->barrier();
  return 0;
}

}  // namespace
}  // namespace stoker

int main(int argc, char** argv) {
  try {
    return stoker::run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
