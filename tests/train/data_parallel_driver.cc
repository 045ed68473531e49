// SPDX-License-Identifier: Apache-2.0
// Driver for data_parallel_vs_torch.py, run under mpirun: STEPS SGD steps of a small ResNet-18
// on the CPU backend, data-parallel with synchronised batch norm (each rank one slice of every
// global batch), and the same steps in one process at the global batch. Teacher-forced: step k
// of both runs starts from the same state (the one-process run's state after step k-1), so
// each step is compared on its own and a rounding difference of one step (a ReLU input near
// zero taking the other side) cannot grow over the next ones. Rank 0 writes, per step, the
// state both started from, the global batch, both runs' loss and state after the step, and
// both runs' ReLU outputs (the 2-rank ones gathered from every rank's slice): the script
// tells a ReLU that took the other side within rounding of zero from a fault by them.
// Not a test by itself.
// Usage: data_parallel_driver OUTDIR STEPS PER_RANK_BATCH LR
#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "backend_cases.h"
#include "common/error.h"
#include "train/backend.h"
#include "train/checkpoint.h"
#include "train/parallel/collectives.h"

namespace stoker {
namespace {

constexpr int64_t kSize = 32, kClasses = 10;

void append(Checkpoint& out, const Checkpoint& in, const std::string& prefix) {
  for (Tensor t : in.tensors) {
    t.name = prefix + t.name;
    out.tensors.push_back(std::move(t));
  }
}

struct GlobalBatch {
  std::vector<float> images;  // [global, 3, kSize, kSize], N(0, 1)
  std::vector<int32_t> labels;
};

// The same on every rank (one seed); rank r trains on slice r.
std::vector<GlobalBatch> make_batches(int steps, int64_t global) {
  std::mt19937 rng(42);
  std::normal_distribution<float> normal;
  std::vector<GlobalBatch> out(static_cast<size_t>(steps));
  for (GlobalBatch& g : out) {
    g.images.resize(size_t(global * 3 * kSize * kSize));
    for (float& x : g.images) x = normal(rng);
    for (int64_t i = 0; i < global; ++i) g.labels.push_back(int32_t(rng() % kClasses));
  }
  return out;
}

Checkpoint batch_tensors(const GlobalBatch& g, int64_t global) {
  Checkpoint c;
  c.tensors.push_back(make_f32_tensor("images", {global, 3, kSize, kSize}, g.images));
  c.tensors.push_back(
      make_i64_tensor("labels", {global}, std::vector<int64_t>(g.labels.begin(), g.labels.end())));
  return c;
}

// Every ReLU's output of the last training forward, [global, C, H, W], as "relu.<prefix><layer>".
// Each rank holds rows [rank * b, (rank + 1) * b) of the global batch; a sum of zero-padded
// copies gathers them exactly (x + 0 is x).
Checkpoint relu_outputs(Backend& backend, const Network& net, Collective* coll, int64_t b,
                        int64_t global, const std::string& prefix) {
  Checkpoint out;
  const int rank = coll == nullptr ? 0 : coll->rank();
  for (const Layer& l : net.layers) {
    if (l.kind != LayerKind::relu) continue;
    const std::vector<float> mine = backend.diagnostics().debug_tensor(l.output, false);
    STOKER_CHECK(!mine.empty() && mine.size() % size_t(b) == 0);
    const size_t per_sample = mine.size() / size_t(b);
    std::vector<float> all(per_sample * size_t(global), 0.0f);
    std::copy(mine.begin(), mine.end(), all.begin() + std::ptrdiff_t(rank * b * per_sample));
    if (coll != nullptr && coll->world() > 1) coll->allreduce_sum(all.data(), all.size());
    // The shape as the script reads it: [global, per-sample values] (it knows C, H, W).
    out.tensors.push_back(
        make_f32_tensor("relu." + prefix + l.name, {global, int64_t(per_sample)}, all));
  }
  return out;
}

int run(int argc, char** argv) {
  if (argc != 5) {
    fmt::print(stderr, "usage: {} OUTDIR STEPS PER_RANK_BATCH LR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const int steps = std::stoi(argv[2]);
  const int64_t b = std::stoll(argv[3]);
  const float lr = std::stof(argv[4]);
  std::unique_ptr<Collective> coll = make_host_collective();
  const int rank = coll->rank(), world = coll->world();
  const int64_t global = b * world, image = 3 * kSize * kSize;
  const Network net = test::resnet(18, kClasses);
  SgdConfig sgd;  // torch.optim.SGD(momentum=0.9, weight_decay=1e-4) on every parameter
  sgd.weight_decay = 1e-4f;
  const std::vector<GlobalBatch> batches = make_batches(steps, global);

  BackendConfig bc;
  bc.height = bc.width = kSize;
  bc.threads = 1;
  bc.batch = b;
  bc.collective = coll.get();
  bc.sync_bn = true;
  auto dp = make_backend("cpu", net, bc);
  bc.batch = global;
  bc.collective = nullptr;
  bc.sync_bn = false;
  auto one = make_backend("cpu", net, bc);
  Checkpoint start = test::tame_init(net, 11);
  for (int k = 0; k < steps; ++k) {
    const GlobalBatch& g = batches[size_t(k)];
    dp->load(start, "start");
    one->load(start, "start");
    float dp_loss =
        test::step(*dp, g.images.data() + rank * b * image, g.labels.data() + rank * b, b);
    dp->update(sgd, lr);
    coll->allreduce_sum(&dp_loss, 1);  // the global batch's mean: the mean of the ranks' means
    const Checkpoint dp_relu = relu_outputs(*dp, net, coll.get(), b, global, "dp.");
    const float one_loss = test::step(*one, g.images.data(), g.labels.data(), global);
    one->update(sgd, lr);
    const Checkpoint one_relu = relu_outputs(*one, net, nullptr, global, global, "one.");
    Checkpoint after = one->save();
    if (rank == 0) {
      Checkpoint out = batch_tensors(g, global);
      out.tensors.push_back(
          make_f32_tensor("dp.loss", {1}, std::vector<float>{dp_loss / float(world)}));
      out.tensors.push_back(make_f32_tensor("one.loss", {1}, std::vector<float>{one_loss}));
      append(out, start, "start.");
      append(out, dp->save(), "dp.");
      append(out, after, "one.");
      append(out, dp_relu, "");
      append(out, one_relu, "");
      save_checkpoint(fmt::format("{}/step{}.safetensors", dir, k), out);
    }
    start = std::move(after);
  }
  if (rank == 0)
    fmt::print(
        "{} ranks x batch {} with sync BN and 1 process x batch {}: {} steps, each from "
        "the same state ({})\n",
        world, b, global, steps, coll->describe());
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
