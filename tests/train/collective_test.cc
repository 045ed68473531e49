// SPDX-License-Identifier: Apache-2.0
// One suite for every Collective (train/parallel), nccl-tests' way: the same cases over the world
// of one, MPI and NCCL. MPI runs when this executable runs under mpirun
// (scripts/mpirun_local.sh N; ctest runs it with 2 and 3 ranks) and skips otherwise; NCCL
// runs in either world with a CUDA device for every rank and skips, saying so, without. Sums
// against the same sum done locally, tickets in order, broadcast from a non-zero root, every
// rank holding the same bits, and memory an engine cannot reach refused.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "collective_engines.h"
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

struct EngineCase {
  const char* name;
  const char* describes;  // in describe()
  // The message when handed the other kind of memory; null: either kind (the identity).
  const char* refuses;
};

void PrintTo(const EngineCase& e, std::ostream* os) {
  *os << e.name;
}

const EngineCase kEngines[] = {
    {"single", "single process", nullptr},
    {"mpi", "mpi (Open MPI", "takes host memory"},
#if STOKER_HAVE_NCCL
    {"nccl", "nccl ", "takes device memory"},
#endif
};

::testing::Environment* const mpi_env = ::testing::AddGlobalTestEnvironment(new MpiWorld);

class CollectiveSuite : public ::testing::TestWithParam<EngineCase> {
 protected:
  void SetUp() override {
    const std::string name = GetParam().name;
    if (name == "single") {
      owned = make_single_collective();
      memory = std::make_unique<test::HostMemory>();
    } else if (name == "mpi") {
      if (!mpirun_world())
        STOKER_SKIP_HONEST("not-applicable", "not under mpirun (scripts/mpirun_local.sh 2 ...)");
      ASSERT_NE(MpiWorld::get(), nullptr);
      memory = std::make_unique<test::HostMemory>();
    } else {
      // Over MPI's ranks under mpirun, else over a world of one.
      if (mpirun_world()) {
        ASSERT_NE(MpiWorld::get(), nullptr);
      } else {
        host = make_single_collective();
      }
      test::DeviceEngine e = test::make_nccl_engine(host ? *host : *MpiWorld::get());
      if (!e.collective) STOKER_SKIP_UNAVAILABLE(e.why_not);
      owned = std::move(e.collective);
      memory = std::move(e.memory);
    }
    c = owned ? owned.get() : MpiWorld::get();
  }
  // `values` in the engine's memory.
  template <class T>
  T* put(const std::vector<T>& values) {
    void* p = memory->allocate(values.size() * sizeof(T));
    memory->copy_in(p, values.data(), values.size() * sizeof(T));
    return static_cast<T*>(p);
  }
  template <class T>
  std::vector<T> get(const T* p, size_t n) {
    std::vector<T> out(n);
    memory->copy_out(out.data(), p, n * sizeof(T));
    return out;
  }
  std::unique_ptr<Collective> host, owned;
  std::unique_ptr<test::EngineMemory> memory;
  Collective* c = nullptr;
};

TEST_P(CollectiveSuite, KnowsItsRankAndWorld) {
  const std::optional<LaunchWorld> launched = mpirun_world();
  const bool alone = std::string(GetParam().name) == "single";
  EXPECT_EQ(c->world(), launched && !alone ? launched->world : 1);
  EXPECT_EQ(c->rank(), launched && !alone ? launched->rank : 0);
  EXPECT_NE(c->describe().find(GetParam().describes), std::string::npos) << c->describe();
  if (c->world() > 1) {
    EXPECT_NE(c->describe().find(fmt::format("{} ranks", c->world())), std::string::npos)
        << c->describe();
  }
}

// While every rank runs, none is known to have ended (a rank that has is covered with real
// processes in peer_liveness_test.cc and, under mpirun, by tests/train/train_mpi_test.sh).
TEST_P(CollectiveSuite, KnowsNoPeerEndedWhileAllRun) {
  EXPECT_EQ(c->ended_peer(), "");
  c->barrier();  // no rank leaves (and ends) before every rank has looked
}

TEST_P(CollectiveSuite, SumsLikeTheLocalSumAndEveryRankHoldsTheSameBits) {
  // Not a multiple of any world size: the blocks are uneven.
  const size_t n = 1000003;
  std::vector<float> mine(n);
  for (size_t i = 0; i < n; ++i) mine[i] = contribution(c->rank(), i);
  float* x = put(mine);
  c->allreduce_sum(x, n, memory->where());
  const std::vector<float> sum = get(x, n);

  size_t far = 0;
  for (size_t i = 0; i < n; ++i) {
    double exact = 0;
    for (int r = 0; r < c->world(); ++r) exact += contribution(r, i);
    // One rank: its own values. Two: one float addition, commutative, so exactly a + b.
    if (c->world() == 1) {
      far += sum[i] != contribution(0, i);
    } else if (c->world() == 2) {
      far += sum[i] != contribution(0, i) + contribution(1, i);
    } else if (std::abs(sum[i] - exact) > 1e-6 * 1e6 * c->world()) {
      ++far;
    }
  }
  EXPECT_EQ(far, 0u);

  // Rank 0's bits to everyone: each rank compares its own.
  c->broadcast(x, n * sizeof(float), 0, memory->where());
  const std::vector<float> zero = get(x, n);
  EXPECT_EQ(std::memcmp(zero.data(), sum.data(), n * sizeof(float)), 0)
      << "rank " << c->rank() << " holds other bits than rank 0";
}

TEST_P(CollectiveSuite, TicketsFinishInTheOrderTheyStarted) {
  std::vector<float*> bufs;
  std::vector<uint64_t> tickets;
  for (size_t k = 0; k < 6; ++k) {
    bufs.push_back(put(std::vector<float>((k + 1) * 100003, float(c->rank() + 1) * float(k + 1))));
    tickets.push_back(c->start_allreduce_sum(bufs.back(), (k + 1) * 100003, memory->where()));
  }
  for (size_t k = 1; k < tickets.size(); ++k) EXPECT_GT(tickets[k], tickets[k - 1]);
  // Waiting for the last one means every earlier one is finished too.
  c->wait(tickets.back());
  const float ranks_sum = float(c->world() * (c->world() + 1) / 2);
  for (size_t k = 0; k < bufs.size(); ++k) {
    size_t wrong = 0;
    for (float v : get(bufs[k], (k + 1) * 100003)) wrong += v != ranks_sum * float(k + 1);
    EXPECT_EQ(wrong, 0u) << "bucket " << k;
  }
  for (auto it = tickets.rbegin(); it != tickets.rend(); ++it) c->wait(*it);
}

TEST_P(CollectiveSuite, BroadcastsFromAnyRoot) {
  const int root = c->world() - 1;
  std::vector<unsigned char> bytes(777777, static_cast<unsigned char>(c->rank()));
  if (c->rank() == root)
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 1);
  unsigned char* p = put(bytes);
  c->broadcast(p, bytes.size(), root, memory->where());
  size_t wrong = 0;
  const std::vector<unsigned char> got = get(p, bytes.size());
  for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != static_cast<unsigned char>(i * 7 + 1);
  EXPECT_EQ(wrong, 0u);
  c->barrier();
}

// MPI takes host memory and NCCL device memory: the other kind is an error naming what it
// takes, before any rank waits. The world of one does nothing with either.
TEST_P(CollectiveSuite, RefusesMemoryItCannotReach) {
  float x = 1;
  const CollectiveMemory other{.device = !memory->where().device};
  if (GetParam().refuses == nullptr) {
    c->allreduce_sum(&x, 1, other);
    EXPECT_EQ(x, 1.0f);
    return;
  }
  try {
    c->allreduce_sum(&x, 1, other);
    ADD_FAILURE() << "no stoker::Error for the other kind of memory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(GetParam().refuses), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, CollectiveSuite, ::testing::ValuesIn(kEngines),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(HostCollective, MatchesTheLauncher) {
  if (mpirun_world())
    STOKER_SKIP_HONEST("not-applicable", "under mpirun: the suite's mpi rows cover it");
  auto c = make_host_collective();
  EXPECT_EQ(c->world(), 1);
}

}  // namespace
}  // namespace stoker
