// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/error.h"
#include "loader/sampler.h"
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

TEST(Sampler, ShardsCoverTheDatasetLikeDistributedSampler) {
  std::multiset<uint32_t> seen;
  for (uint32_t r = 0; r < 3; ++r) {
    Sampler s(10, {.batch_size = 2, .shuffle = true, .seed = 1, .rank = r, .world = 3});
    EXPECT_EQ(s.epoch_size(), 4u);  // ceil(10 / 3), padded by wrapping around
    for (uint32_t v : order(s)) seen.insert(v);
  }
  for (uint32_t i = 0; i < 10; ++i) EXPECT_GE(seen.count(i), 1u);
  EXPECT_EQ(seen.size(), 12u);
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
