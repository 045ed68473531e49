// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "common/histogram.h"

namespace stoker {
namespace {

TEST(Histogram, QuantilesWithinBucketWidth) {
  Histogram h;
  for (int i = 1; i <= 10000; ++i) h.add(i * 1000);  // 1 us .. 10 ms
  EXPECT_EQ(h.count(), 10000u);
  EXPECT_NEAR(h.mean_ns(), 5000500.0, 1.0);
  EXPECT_NEAR(h.quantile_ns(0.5), 5e6, 5e6 * 0.13);
  EXPECT_NEAR(h.quantile_ns(0.99), 9.9e6, 9.9e6 * 0.13);
  EXPECT_EQ(h.quantile_ns(1.0), 10e6);
  Histogram g;
  g.add(1);
  g.merge(h);
  EXPECT_EQ(g.count(), 10001u);
  EXPECT_EQ(g.max_ns(), 10000000);
}

TEST(Histogram, Empty) {
  Histogram h;
  EXPECT_EQ(h.quantile_ns(0.5), 0.0);
  EXPECT_EQ(h.mean_ns(), 0.0);
}

}  // namespace
}  // namespace stoker
