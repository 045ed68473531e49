// SPDX-License-Identifier: Apache-2.0
// train/gpu/plan_cache.h: a plan is built once per key and shared after; an unsupported shape
// (a null plan) is remembered and not asked again; a failing build leaves nothing behind.
#include "train/gpu/plan_cache.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace stoker::gpu {
namespace {

struct FakePlan {
  std::string key;
  size_t workspace = 0;
};

TEST(PlanCache, BuildsOncePerKeyAndRemembersARefusal) {
  PlanCache<FakePlan> cache;
  int built = 0;
  const auto build = [&](const std::string& key, bool supported) {
    return [&built, key, supported]() -> std::shared_ptr<FakePlan> {
      ++built;
      if (!supported) return nullptr;
      return std::make_shared<FakePlan>(FakePlan{key, key.size()});
    };
  };
  const auto a = cache.get("conv n32 c64 h56", build("conv n32 c64 h56", true));
  const auto b = cache.get("conv n32 c64 h56", build("conv n32 c64 h56", true));
  ASSERT_TRUE(a);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(built, 1);
  const auto c = cache.get("conv n32 c64 h28", build("conv n32 c64 h28", true));
  ASSERT_TRUE(c);
  EXPECT_NE(a.get(), c.get());
  EXPECT_EQ(c->key, "conv n32 c64 h28");
  EXPECT_FALSE(cache.get("genstats f32", build("genstats f32", false)));
  EXPECT_FALSE(cache.get("genstats f32", build("genstats f32", true)));  // not asked again
  EXPECT_EQ(built, 3);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_EQ(cache.builds(), 3u);
  EXPECT_EQ(cache.hits(), 2u);
}

TEST(PlanCache, AFailedBuildIsNotCached) {
  PlanCache<FakePlan> cache;
  EXPECT_THROW(cache.get("k", []() -> std::shared_ptr<FakePlan> { throw std::runtime_error("x"); }),
               std::runtime_error);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_TRUE(cache.get("k", [] { return std::make_shared<FakePlan>(); }));
}

}  // namespace
}  // namespace stoker::gpu
