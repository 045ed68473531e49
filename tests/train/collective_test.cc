// SPDX-License-Identifier: Apache-2.0
// The Collective implementations (train/parallel): the world of one directly, the MPI one when
// this executable runs under mpirun (scripts/mpirun_local.sh N; ctest runs it with 2 and 3
// ranks). Sums against the same sum done locally, tickets in order, broadcast from a non-zero
// root, and every rank holding the same bits.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "common/error.h"
#include "mpi_world.h"
#include "tests/skip_policy.h"
#include "train/parallel/collectives.h"

namespace stoker {
namespace {

// What rank r contributes at element i: magnitudes that differ by many orders, so that the
// order of the additions shows in the bits.
float contribution(int r, size_t i) {
  uint64_t h = (uint64_t(r) * 0x9E3779B97F4A7C15ull) ^ (uint64_t(i) * 0xBF58476D1CE4E5B9ull);
  h ^= h >> 31;
  float unit = float(h % 1000003) / 1000003.0f - 0.5f;
  float scale = (i + size_t(r)) % 3 == 0 ? 1e6f : (i % 3 == 1 ? 1.0f : 1e-6f);
  return unit * scale;
}

TEST(SingleCollective, IsTheIdentity) {
  auto c = make_single_collective();
  EXPECT_EQ(c->rank(), 0);
  EXPECT_EQ(c->world(), 1);
  EXPECT_EQ(c->describe(), "single process");
  std::vector<float> x = {1.5f, -2.0f};
  c->allreduce_sum(x.data(), x.size());
  uint64_t t1 = c->start_allreduce_sum(x.data(), x.size());
  uint64_t t2 = c->start_allreduce_sum(x.data(), 1);
  EXPECT_LT(t1, t2);
  c->wait(t2);
  c->wait(t1);
  c->broadcast(x.data(), sizeof(float) * x.size(), 0);
  c->barrier();
  EXPECT_EQ(x, (std::vector<float>{1.5f, -2.0f}));
}

TEST(HostCollective, MatchesTheLauncher) {
  if (mpirun_world()) STOKER_SKIP_HONEST("not-applicable", "under mpirun: the Mpi tests cover it");
  auto c = make_host_collective();
  EXPECT_EQ(c->world(), 1);
}

::testing::Environment* const mpi_env = ::testing::AddGlobalTestEnvironment(new MpiWorld);

class Mpi : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!mpirun_world())
      STOKER_SKIP_HONEST("not-applicable", "not under mpirun (scripts/mpirun_local.sh 2 ...)");
    c = MpiWorld::get();
    ASSERT_NE(c, nullptr);
  }
  Collective* c = nullptr;
};

TEST_F(Mpi, KnowsItsRankAndWorld) {
  EXPECT_EQ(c->world(), mpirun_world()->world);
  EXPECT_EQ(c->rank(), mpirun_world()->rank);
  EXPECT_NE(c->describe().find("mpi (Open MPI"), std::string::npos) << c->describe();
  EXPECT_NE(c->describe().find(fmt::format("{} ranks", c->world())), std::string::npos);
}

TEST_F(Mpi, SumsLikeTheLocalSumAndEveryRankHoldsTheSameBits) {
  // Not a multiple of any world size: the blocks are uneven.
  const size_t n = 1000003;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = contribution(c->rank(), i);
  c->allreduce_sum(x.data(), n);

  size_t far = 0;
  for (size_t i = 0; i < n; ++i) {
    double exact = 0;
    for (int r = 0; r < c->world(); ++r) exact += contribution(r, i);
    // Two ranks: one float addition, commutative, so exactly the local a + b.
    if (c->world() == 2) {
      if (x[i] != contribution(0, i) + contribution(1, i)) ++far;
    } else if (std::abs(x[i] - exact) > 1e-6 * 1e6 * c->world()) {
      ++far;
    }
  }
  EXPECT_EQ(far, 0u);

  // Rank 0's bits to everyone: each rank compares its own.
  std::vector<float> zero = x;
  c->broadcast(zero.data(), n * sizeof(float), 0);
  EXPECT_EQ(std::memcmp(zero.data(), x.data(), n * sizeof(float)), 0)
      << "rank " << c->rank() << " holds other bits than rank 0";
}

TEST_F(Mpi, TicketsFinishInTheOrderTheyStarted) {
  std::vector<std::vector<float>> bufs;
  std::vector<uint64_t> tickets;
  for (size_t k = 0; k < 6; ++k) {
    bufs.emplace_back((k + 1) * 100003, float(c->rank() + 1) * float(k + 1));
    tickets.push_back(c->start_allreduce_sum(bufs.back().data(), bufs.back().size()));
  }
  for (size_t k = 1; k < tickets.size(); ++k) EXPECT_GT(tickets[k], tickets[k - 1]);
  // Waiting for the last one means every earlier one is finished too.
  c->wait(tickets.back());
  const float ranks_sum = float(c->world() * (c->world() + 1) / 2);
  for (size_t k = 0; k < bufs.size(); ++k) {
    size_t wrong = 0;
    for (float v : bufs[k]) wrong += v != ranks_sum * float(k + 1);
    EXPECT_EQ(wrong, 0u) << "bucket " << k;
  }
  for (auto it = tickets.rbegin(); it != tickets.rend(); ++it) c->wait(*it);
}

TEST_F(Mpi, BroadcastsFromAnyRoot) {
  const int root = c->world() - 1;
  std::vector<unsigned char> bytes(777777, static_cast<unsigned char>(c->rank()));
  if (c->rank() == root)
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 1);
  c->broadcast(bytes.data(), bytes.size(), root);
  size_t wrong = 0;
  for (size_t i = 0; i < bytes.size(); ++i)
    wrong += bytes[i] != static_cast<unsigned char>(i * 7 + 1);
  EXPECT_EQ(wrong, 0u);
  c->barrier();
}

TEST_F(Mpi, RefusesDeviceMemory) {
  float x = 1;
  try {
    c->allreduce_sum(&x, 1, CollectiveMemory{.device = true});
    ADD_FAILURE() << "no stoker::Error for device memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("host memory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stoker
