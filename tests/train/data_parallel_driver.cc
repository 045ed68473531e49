// SPDX-License-Identifier: Apache-2.0
// Driver for data_parallel_vs_torch.py, run under mpirun: STEPS SGD steps of a small ResNet-18
// on the CPU backend, data-parallel with synchronised batch norm (each rank one slice of every
// global batch), and the same steps in one process at the global batch. Rank 0 writes the
// starting weights, the global batches and both runs' losses and final state, for the script
// to hold the difference to torch's own fp32-vs-fp64 difference. Not a test by itself.
// Usage: data_parallel_driver OUTDIR STEPS PER_RANK_BATCH LR
#include <fmt/format.h>

#include <random>
#include <string>
#include <vector>

#include "backend_cases.h"
#include "common/error.h"
#include "train/backend.h"
#include "train/checkpoint.h"
#include "train/dist/collectives.h"

namespace stoker {
namespace {

constexpr int64_t kSize = 32, kClasses = 10;

void append(Checkpoint& out, const Checkpoint& in, const std::string& prefix) {
  for (Tensor t : in.tensors) {
    t.name = prefix + t.name;
    out.tensors.push_back(std::move(t));
  }
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
  const int64_t global = b * world;
  const Network net = test::resnet(18, kClasses);
  const Checkpoint init = test::tame_init(net, 11);
  SgdConfig sgd;  // torch.optim.SGD(momentum=0.9, weight_decay=1e-4) on every parameter
  sgd.weight_decay = 1e-4f;

  // The global batches: the same on every rank (one seed), rank r trains on slice r.
  std::mt19937 rng(42);
  std::normal_distribution<float> normal;
  const int64_t image = 3 * kSize * kSize;
  std::vector<std::vector<float>> images(static_cast<size_t>(steps));
  std::vector<std::vector<int32_t>> labels(static_cast<size_t>(steps));
  Checkpoint batches;
  for (int k = 0; k < steps; ++k) {
    images[size_t(k)].resize(size_t(global * image));
    for (float& x : images[size_t(k)]) x = normal(rng);
    std::vector<int64_t> l64;
    for (int64_t i = 0; i < global; ++i) {
      labels[size_t(k)].push_back(int32_t(rng() % kClasses));
      l64.push_back(labels[size_t(k)].back());
    }
    batches.tensors.push_back(
        make_f32_tensor(fmt::format("images.{}", k), {global, 3, kSize, kSize}, images[size_t(k)]));
    batches.tensors.push_back(make_i64_tensor(fmt::format("labels.{}", k), {global}, l64));
  }

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
  dp->load(init, "init");
  one->load(init, "init");
  std::vector<float> dp_losses, one_losses;
  for (int k = 0; k < steps; ++k) {
    float loss = test::step(*dp, images[size_t(k)].data() + rank * b * image,
                            labels[size_t(k)].data() + rank * b, b);
    dp->update(sgd, lr);
    coll->allreduce_sum(&loss, 1);  // the global batch's mean: the mean of the ranks' means
    dp_losses.push_back(loss / float(world));
    one_losses.push_back(
        test::step(*one, images[size_t(k)].data(), labels[size_t(k)].data(), global));
    one->update(sgd, lr);
  }
  if (rank == 0) {
    save_checkpoint(dir + "/init.safetensors", init);
    save_checkpoint(dir + "/batches.safetensors", batches);
    Checkpoint out;
    out.tensors.push_back(make_f32_tensor("dp.losses", {steps}, dp_losses));
    out.tensors.push_back(make_f32_tensor("one.losses", {steps}, one_losses));
    append(out, dp->save(), "dp.");
    append(out, one->save(), "one.");
    save_checkpoint(dir + "/result.safetensors", out);
    fmt::print("{} ranks x batch {} with sync BN and 1 process x batch {}: {} steps ({})\n", world,
               b, global, steps, coll->describe());
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
