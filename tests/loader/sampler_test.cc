// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/error.h"
#include "loader/sampler/sampler.h"
#include "test_util.h"

namespace stoker {
namespace {

std::vector<uint32_t> order(const Sampler& s) {
  std::vector<uint32_t> o;
  for (size_t i = 0; i < s.epoch_size(); ++i) o.push_back(s.at(i));
  return o;
}

TEST(Sampler, SequentialAndBatches) {
  Sampler s(10, {.batch_size = 4, .shuffle = false});
  EXPECT_EQ(order(s), (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(s.batches(), 3u);
  EXPECT_EQ(s.batch_length(2), 2u);
  Sampler d(10, {.batch_size = 4, .shuffle = false, .drop_last = true});
  EXPECT_EQ(d.batches(), 2u);
}

TEST(Sampler, ShuffleIsAPermutationAndAFunctionOfSeedAndEpoch) {
  Sampler a(1000, {.batch_size = 8, .shuffle = true, .seed = 3});
  Sampler b(1000, {.batch_size = 8, .shuffle = true, .seed = 3});
  auto oa = order(a);
  EXPECT_EQ(oa, order(b));
  auto sorted = oa;
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < 1000; ++i) ASSERT_EQ(sorted[i], i);
  a.set_epoch(1);
  EXPECT_NE(order(a), oa);
  a.set_epoch(0);
  EXPECT_EQ(order(a), oa);
  Sampler c(1000, {.batch_size = 8, .shuffle = true, .seed = 4});
  EXPECT_NE(order(c), oa);
}

// The global order rebuilt from the ranks of a world: global step k is rank 0's batch k,
// then rank 1's, and so on.
std::vector<uint32_t> global_order(size_t n, SamplerConfig c, uint32_t world, uint64_t epoch) {
  std::vector<Sampler> ranks;
  for (uint32_t r = 0; r < world; ++r) {
    SamplerConfig rc = c;
    rc.rank = r;
    rc.world = world;
    ranks.emplace_back(n, rc);
    ranks.back().set_epoch(epoch);
  }
  std::vector<uint32_t> all;
  for (size_t k = 0;; ++k) {
    bool any = false;
    for (const Sampler& s : ranks) {
      if (k >= s.batches()) continue;
      any = true;
      for (size_t i = 0; i < s.batch_length(k); ++i) all.push_back(s.at(s.batch_begin(k) + i));
    }
    if (!any) return all;
  }
}

TEST(Sampler, RanksVisitEverySampleExactlyOncePerEpoch) {
  for (uint32_t world : {2u, 3u, 4u}) {
    for (bool drop_last : {false, true}) {
      const size_t n = 103;  // not a multiple of any global batch below
      std::multiset<uint32_t> seen;
      size_t batches = SIZE_MAX;
      for (uint32_t r = 0; r < world; ++r) {
        Sampler s(n,
                  {.batch_size = 4, .drop_last = drop_last, .seed = 1, .rank = r, .world = world});
        s.set_epoch(2);
        for (size_t i = 0; i < s.epoch_size(); ++i) seen.insert(s.at(i));
        // Under drop_last every rank takes the same number of full steps.
        if (drop_last) {
          if (batches != SIZE_MAX) {
            EXPECT_EQ(s.batches(), batches);
          }
          batches = s.batches();
          for (size_t k = 0; k < s.batches(); ++k) EXPECT_EQ(s.batch_length(k), 4u);
        }
      }
      const size_t full = n / (4 * world) * (4 * world);
      EXPECT_EQ(seen.size(), drop_last ? full : n) << world << " ranks";
      for (uint32_t v : seen) EXPECT_EQ(seen.count(v), 1u) << "sample " << v << ", " << world;
      if (!drop_last) {
        for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(seen.count(i), 1u) << i;
      }
    }
  }
}

TEST(Sampler, TheGlobalOrderDoesNotDependOnTheWorldSize) {
  // Per-rank batch 12 / world: the same global batch of 12 on 1, 2, 3 and 4 ranks.
  const size_t n = 100;
  for (bool shuffle : {false, true}) {
    Sampler one(n, {.batch_size = 12, .shuffle = shuffle, .seed = 7});
    one.set_epoch(3);
    const std::vector<uint32_t> reference = order(one);
    for (uint32_t world : {1u, 2u, 3u, 4u}) {
      SamplerConfig c{.batch_size = 12 / world, .shuffle = shuffle, .seed = 7};
      EXPECT_EQ(global_order(n, c, world, 3), reference) << world << " ranks";
    }
  }
  // And for any per-rank batch: the order is the dataset's, only cut differently.
  SamplerConfig c{.batch_size = 5, .shuffle = true, .seed = 7};
  Sampler one(n, c);
  one.set_epoch(3);
  EXPECT_EQ(global_order(n, c, 3, 3), order(one));
}

TEST(Sampler, PositionsAreGlobalAndResumeOnAnotherWorldSize) {
  // 2 ranks x 6 stopped after 3 steps: global position 36, the same samples consumed as 36
  // of one process's order.
  const size_t n = 100;
  Sampler r1(n, {.batch_size = 6, .seed = 9, .rank = 1, .world = 2});
  EXPECT_EQ(r1.global_batch(), 12u);
  EXPECT_EQ(r1.position_after(3), 36u);
  // Resumed at 36 on 3 ranks x 4 (global batch 12) or 4 ranks x 3: global step 3.
  Sampler r3(n, {.batch_size = 4, .seed = 9, .rank = 2, .world = 3});
  EXPECT_EQ(r3.batch_of(36), 3u);
  Sampler one(n, {.batch_size = 12, .seed = 9});
  // Rank 2 of 3 at step 3 takes global positions [36 + 8, 36 + 12).
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(r3.at(r3.batch_begin(3) + i), one.at(44 + i));
  // 36 is not a boundary of 4 ranks x 8 = 32: refused, naming the global batch.
  Sampler r4(n, {.batch_size = 8, .seed = 9, .world = 4});
  EXPECT_ERROR("global batch 32 (4 ranks x batch 8)", r4.batch_of(36));
  // The end of an epoch is the end on any world size.
  EXPECT_EQ(r4.batch_of(100), r4.batches());
  Sampler d(n, {.batch_size = 8, .drop_last = true, .seed = 9, .world = 4});
  EXPECT_EQ(d.position_after(d.batches()), 96u);
  EXPECT_EQ(d.batch_of(96), d.batches());
  EXPECT_EQ(d.batch_of(100), d.batches());
}

TEST(Sampler, ResumePositionsAreBatchBoundaries) {
  Sampler s(100, {.batch_size = 16});
  EXPECT_EQ(s.batch_of(32), 2u);
  EXPECT_ERROR("33", s.batch_of(33));
  EXPECT_EQ(s.batch_of(100), s.batches());  // the end, after the short last batch of 4
  EXPECT_ERROR("112", s.batch_of(112));     // past the end: the dataset shrank since
}

TEST(Sampler, BadConfigurationIsAnError) {
  EXPECT_ERROR("empty", Sampler(0, {}));
  EXPECT_ERROR("batch", Sampler(10, {.batch_size = 0}));
  EXPECT_ERROR("rank 2", Sampler(10, {.rank = 2, .world = 2}));
}

}  // namespace
}  // namespace stoker
