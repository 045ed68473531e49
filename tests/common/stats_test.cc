// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "common/stats.h"

namespace stoker {
namespace {

TEST(Stats, QuantileIsTheSortedElementAtFloorQN) {
  const std::vector<double> v = {9, 1, 8, 2, 7, 3, 6, 4, 5, 0};  // 0..9 shuffled
  EXPECT_EQ(quantile(v, 0.0), 0);
  EXPECT_EQ(quantile(v, 0.1), 1);
  EXPECT_EQ(quantile(v, 0.5), 5);
  EXPECT_EQ(quantile(v, 0.9), 9);
  EXPECT_EQ(quantile(v, 0.99), 9);
  EXPECT_EQ(quantile(v, 1.0), 9);  // clamped to the last
  EXPECT_EQ(quantile({}, 0.5), 0);
}

TEST(Stats, MedianAveragesTheMiddlePairOfAnEvenCount) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({7}), 7);
  EXPECT_EQ(median({}), 0);
}

}  // namespace
}  // namespace stoker
