// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <vector>

#include "common/rng.h"

namespace stoker {
namespace {

TEST(Rng, PureFunctionOfKey) {
  Rng a(1, 2, 3), b(1, 2, 3), c(1, 2, 4);
  for (int i = 0; i < 100; ++i) {
    const uint64_t x = a.next();
    EXPECT_EQ(x, b.next());
    EXPECT_NE(x, c.next());
  }
}

TEST(Rng, BelowIsUniformAndInRange) {
  Rng r(9);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 70000; ++i) {
    const uint64_t v = r.below(7);
    ASSERT_LT(v, 7u);
    ++counts[v];
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 400);
  EXPECT_EQ(r.below(1), 0u);
  for (int i = 0; i < 1000; ++i) {
    const double u = r.uniform(0.08, 1.0);
    ASSERT_GE(u, 0.08);
    ASSERT_LT(u, 1.0);
  }
}

}  // namespace
}  // namespace stoker
