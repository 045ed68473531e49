// SPDX-License-Identifier: Apache-2.0
// Data parallelism in the CPU backend (train/cpu): gradient buckets all-reduced during the
// backward, and synchronised batch norm. Under mpirun (ctest runs it with 2 ranks through
// scripts/mpirun_local.sh): every rank's weights and momentum bit-identical after every step;
// the averaged gradients equal the mean of each rank's own single-process gradients. In one
// process: sync BN on a world of one is plain BN. The comparison with one process at the
// global batch is data_parallel_vs_torch.py's (it needs torch for its bound).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backend_cases.h"
#include "common/error.h"
#include "mpi_world.h"
#include "tests/skip_policy.h"
#include "train/backend.h"
#include "train/cpu/cpu_backend.h"
#include "train/parallel/collectives.h"

namespace stoker {
namespace {

using test::error;
using test::values;

constexpr int64_t kBatch = 4, kSize = 32, kClasses = 10;

::testing::Environment* const mpi_env = ::testing::AddGlobalTestEnvironment(new MpiWorld);

BackendConfig config(Collective* c, bool sync_bn, size_t bucket_bytes) {
  BackendConfig bc;
  bc.batch = kBatch;
  bc.height = bc.width = kSize;
  bc.threads = 1;  // two ranks on a two-core machine
  bc.collective = c;
  bc.sync_bn = sync_bn;
  bc.bucket_bytes = bucket_bytes;
  return bc;
}

// A batch that differs per rank and per step.
struct Batch {
  std::vector<float> images;
  std::vector<int32_t> labels;
};
Batch make_batch(int rank, int step) {
  std::mt19937 rng(uint32_t(1000 * rank + step + 1));
  std::normal_distribution<float> normal;
  Batch b;
  b.images.resize(size_t(kBatch * 3 * kSize * kSize));
  for (float& x : b.images) x = normal(rng);
  for (int64_t i = 0; i < kBatch; ++i) b.labels.push_back(int32_t(rng() % kClasses));
  return b;
}

// Every f32 tensor of a save() whose name passes `keep`, bytes end to end.
std::vector<float> flatten(const Checkpoint& c, bool with_running_stats) {
  std::vector<float> out;
  for (const Tensor& t : c.tensors) {
    if (t.dtype != TensorDType::f32) continue;
    if (!with_running_stats &&
        (t.name.ends_with("running_mean") || t.name.ends_with("running_var")))
      continue;
    const std::vector<float> v = values(t);
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

class Mpi : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mpirun_world())
      STOKER_SKIP_HONEST("not-applicable", "not under mpirun (scripts/mpirun_local.sh 2 ...)");
    c = MpiWorld::get();
    ASSERT_NE(c, nullptr);
    ASSERT_GT(c->world(), 1);
  }
  Collective* c = nullptr;
};

// After every step every rank holds rank 0's bits: weights and momentum (and, with sync BN,
// the running statistics too), though each rank trained on different images.
void check_identical_every_step(Collective* c, bool sync_bn) {
  const Network net = test::resnet(18, kClasses);
  // 64 KiB buckets: about one per convolution (each holds at least one conv's gradient).
  auto b = make_backend("cpu", net, config(c, sync_bn, 64 << 10));
  EXPECT_GT(cpu::dnnl_net_of(*b).buckets.size(), 10u);
  b->load(test::tame_init(net, 5), "tame init");
  SgdConfig sgd;
  sgd.weight_decay = 1e-3f;
  std::vector<float> start = flatten(b->save(), false);
  for (int step = 0; step < 4; ++step) {
    const Batch batch = make_batch(c->rank(), step);
    float loss = test::step(*b, batch.images.data(), batch.labels.data(), kBatch);
    b->update(sgd, 0.05f);
    // Different data per rank: the losses differ (else this test would prove nothing).
    float loss0 = loss;
    c->broadcast(&loss0, sizeof loss0, 0);
    if (c->rank() != 0) {
      EXPECT_NE(loss, loss0) << "step " << step;
    }
    std::vector<float> mine = flatten(b->save(), sync_bn);
    std::vector<float> root = mine;
    c->broadcast(root.data(), root.size() * sizeof(float), 0);
    EXPECT_EQ(std::memcmp(mine.data(), root.data(), mine.size() * sizeof(float)), 0)
        << "rank " << c->rank() << " differs from rank 0 after step " << step
        << " (max relative difference " << error(root, mine) << ")";
  }
  std::vector<float> now = flatten(b->save(), false);
  now.resize(start.size());  // the model; the momentum buffers follow it
  EXPECT_GT(error(start, now), 1e-4) << "the weights did not move";
}

TEST_F(Mpi, WeightsAndMomentumAreBitIdenticalAfterEveryStep) {
  check_identical_every_step(c, false);
}

TEST_F(Mpi, WithSyncBnRunningStatisticsAreIdenticalToo) {
  check_identical_every_step(c, true);
}

// Without sync BN a rank's gradients are its own batch's; the backend's averaged ones must be
// the mean over the ranks of what a single process computes on each rank's batch.
TEST_F(Mpi, GradientsAreTheMeanOfEachRanksOwn) {
  const Network net = test::resnet(18, kClasses);
  const Checkpoint init = test::tame_init(net, 9);
  auto dp = make_backend("cpu", net, config(c, false, 256 << 10));
  auto alone = make_backend("cpu", net, config(nullptr, false, 0));
  dp->load(init, "tame init");
  alone->load(init, "tame init");
  const Batch batch = make_batch(c->rank(), 0);
  test::step(*dp, batch.images.data(), batch.labels.data(), kBatch);
  test::step(*alone, batch.images.data(), batch.labels.data(), kBatch);
  const Checkpoint got = dp->gradients(), own = alone->gradients();
  // Every rank's own gradients, summed here in rank order, then halved (as the backend does).
  std::vector<float> sum(flatten(own, false).size(), 0.0f);
  for (int r = 0; r < c->world(); ++r) {
    std::vector<float> g = flatten(own, false);
    c->broadcast(g.data(), g.size() * sizeof(float), r);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += g[i];
  }
  ASSERT_EQ(got.tensors.size(), own.tensors.size());
  size_t offset = 0;
  double worst = 0;
  for (size_t t = 0; t < got.tensors.size(); ++t) {
    const std::vector<float> g = values(got.tensors[t]);
    std::vector<float> mean(g.size());
    for (size_t i = 0; i < g.size(); ++i) mean[i] = sum[offset + i] / float(c->world());
    offset += g.size();
    const double e = error(mean, g);
    worst = std::max(worst, e);
    EXPECT_LE(e, 1e-6) << got.tensors[t].name << " is not the mean of the ranks' gradients";
  }
  if (c->rank() == 0) std::printf("gradients vs mean of own: worst relative error %.3g\n", worst);
}

// Sync BN on a world of one is plain BN (the correction terms vanish up to rounding): loss,
// gradients and running statistics after one step.
TEST(SyncBn, OnOneRankIsPlainBatchNorm) {
  const Network net = test::resnet(18, kClasses);
  const Checkpoint init = test::tame_init(net, 3);
  auto plain = make_backend("cpu", net, config(nullptr, false, 0));
  auto sync = make_backend("cpu", net, config(nullptr, true, 0));
  plain->load(init, "tame init");
  sync->load(init, "tame init");
  const Batch batch = make_batch(0, 0);
  const float lp = test::step(*plain, batch.images.data(), batch.labels.data(), kBatch);
  const float ls = test::step(*sync, batch.images.data(), batch.labels.data(), kBatch);
  EXPECT_NEAR(lp, ls, 1e-6 * std::abs(lp));
  const Checkpoint gp = plain->gradients(), gs = sync->gradients();
  ASSERT_EQ(gp.tensors.size(), gs.tensors.size());
  double worst = 0;
  for (size_t t = 0; t < gp.tensors.size(); ++t) {
    const double e = error(values(gp.tensors[t]), values(gs.tensors[t]));
    worst = std::max(worst, e);
    EXPECT_LE(e, 1e-4) << gp.tensors[t].name;
  }
  EXPECT_LE(error(flatten(plain->save(), true), flatten(sync->save(), true)), 1e-6);
  std::printf("sync BN on one rank vs plain BN: worst gradient error %.3g\n", worst);
}

TEST(SyncBn, RefusesBf16) {
  const Network net = test::resnet(18, kClasses);
  BackendConfig bc = config(nullptr, true, 0);
  bc.precision = Precision::bf16;
  setenv("STOKER_TEST_BF16", "1", 1);  // past the native-bf16 check on any CPU
  EXPECT_THROW(
      {
        try {
          cpu::make_cpu_backend(net, bc);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("sync-bn"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
}

}  // namespace
}  // namespace stoker
