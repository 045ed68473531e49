// SPDX-License-Identifier: Apache-2.0
// Data parallelism on GPUs, run under mpirun with one GPU per rank: the CUDA backend's
// gradient buckets over NCCL (a ResNet-18 in f32, buckets small enough to cut it in many
// pieces; the NCCL collective itself is collective_test.cc's, with the other engines): after
// every step every rank holds the same bits, and the averaged gradients are the mean of each rank's
// own gradients (computed by a backend of its own with no collective, summed over MPI). Exits 77
// (skipped), saying why, without a CUDA device or with fewer devices than ranks. Not a gtest: one
// result per job.
#include <fmt/format.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backend_cases.h"
#include "common/error.h"
#include "train/backend.h"
#include "train/checkpoint.h"
#include "train/gpu/device.h"
#include "train/parallel/collective_nccl.h"
#include "train/parallel/collectives.h"

namespace stoker {
namespace {

constexpr int kSkip = 77;
constexpr int64_t kSize = 32, kClasses = 10, kBatch = 4;

int failures = 0;
void expect(bool ok, const std::string& what) {
  if (ok) return;
  ++failures;
  fmt::print(stderr, "FAILED: {}\n", what);
}

// Every rank's tensors byte for byte against rank 0's (sent over the host collective), but
// the batch-norm running statistics: each rank's come from its own images (the CLI
// broadcasts rank 0's before a checkpoint).
int differing_tensors(Collective& host, const Checkpoint& c) {
  int differ = 0;
  for (const Tensor& t : c.tensors) {
    if (t.name.ends_with("running_mean") || t.name.ends_with("running_var")) continue;
    std::vector<uint8_t> root = t.bytes;
    host.broadcast(root.data(), root.size(), 0);
    if (root != t.bytes) ++differ;
  }
  float total = float(differ);
  host.allreduce_sum(&total, 1);
  return int(total);
}

void check_backend(Collective& host, Collective& gpus, int device) {
  const int rank = host.rank(), world = host.world();
  const Network net = test::resnet(18, kClasses);
  const Checkpoint init = test::tame_init(net, 5);
  BackendConfig bc;
  bc.device = device;
  bc.batch = kBatch;
  bc.height = bc.width = kSize;
  bc.precision = Precision::f32;
  bc.bucket_bytes = size_t(1) << 20;  // ResNet-18's 45 MB in dozens of buckets
  bc.collective = &gpus;
  auto dp = make_backend("cuda", net, bc);
  bc.collective = nullptr;
  auto alone = make_backend("cuda", net, bc);
  dp->load(init, "init");
  alone->load(init, "init");
  SgdConfig sgd;
  sgd.weight_decay = 1e-4f;
  // Each rank its own images (the seed is the rank's), the same starting weights.
  std::mt19937 rng(uint32_t(100 + rank));
  std::normal_distribution<float> normal;
  std::vector<float> images(size_t(kBatch * 3 * kSize * kSize));
  std::vector<int32_t> labels(static_cast<size_t>(kBatch));
  for (int k = 0; k < 3; ++k) {
    for (float& x : images) x = normal(rng);
    for (int32_t& l : labels) l = int32_t(rng() % kClasses);
    test::step(*dp, images.data(), labels.data(), kBatch);
    test::step(*alone, images.data(), labels.data(), kBatch);
    // The mean of the ranks' own gradients, summed over MPI: NCCL's order of summation may
    // differ from MPI's, so within float rounding, not bits.
    const Checkpoint mean = dp->gradients();
    const Checkpoint own = alone->gradients();
    double worst = 0;
    for (size_t t = 0; t < own.tensors.size(); ++t) {
      std::vector<float> sum = test::values(own.tensors[t]);
      host.allreduce_sum(sum.data(), sum.size());
      for (float& x : sum) x /= float(world);
      worst =
          std::max(worst, test::error(sum, test::values(test::tensor(mean, own.tensors[t].name))));
    }
    expect(worst < 1e-5,
           fmt::format("step {}: averaged gradients off the ranks' mean by {:.3g}", k, worst));
    expect(differing_tensors(host, mean) == 0,
           fmt::format("step {}: the averaged gradients differ between ranks", k));
    dp->update(sgd, 0.05f);
    // `alone` follows dp's weights, so that its next gradients are at the same point.
    alone->update(sgd, 0.0f);
    const Checkpoint weights = dp->save();
    expect(differing_tensors(host, weights) == 0,
           fmt::format("step {}: the weights differ between ranks", k));
    alone->load(weights, "the data-parallel weights");
  }
}

int run() {
  const std::string why = gpu::device_unavailable_reason(0);
  if (!why.empty()) {
    fmt::print("SKIP[no-cuda-device]: {}\n", why);
    return kSkip;
  }
  const std::optional<LaunchWorld> launched = mpirun_world();
  const int ranks = launched ? launched->world : 1;
  if (gpu::cuda_device_count() < ranks) {
    fmt::print("SKIP[no-cuda-device]: {} ranks need one CUDA device each; {} visible\n", ranks,
               gpu::cuda_device_count());
    return kSkip;
  }
  std::unique_ptr<Collective> host = make_host_collective();
  const int device = mpirun_local_rank();
  std::unique_ptr<Collective> gpus = make_device_collective(*host, device);
  check_backend(*host, *gpus, device);
  float failed = float(failures);
  host->allreduce_sum(&failed, 1);
  if (host->rank() == 0)
    fmt::print("{}: {} ({})\n", failed == 0 ? "passed" : "FAILED", gpus->describe(),
               host->describe());
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace stoker

int main() {
  try {
    return stoker::run();
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
