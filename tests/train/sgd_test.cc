// SPDX-License-Identifier: Apache-2.0
// SGD and the learning-rate schedule on cases worked out by hand (torch's own numbers are
// checked by sgd_vs_torch.py).
#include <gtest/gtest.h>

#include <vector>

#include "common/error.h"
#include "test_util.h"
#include "train/lr_schedule.h"
#include "train/sgd.h"

namespace stoker {
namespace {

TEST(Sgd, MomentumBufferStartsAsTheGradientThenAccumulates) {
  std::vector<float> w = {1.0f, -2.0f}, g = {0.5f, 0.25f}, m(2);
  bool has = false;
  const SgdParam p{w.data(), g.data(), m.data(), &has, 2, false};
  SgdConfig c;
  c.weight_decay = 0;
  sgd_step(c, 0.1f, {&p, 1});
  EXPECT_TRUE(has);
  EXPECT_FLOAT_EQ(m[0], 0.5f);  // no momentum applied on the first step
  EXPECT_FLOAT_EQ(w[0], 1.0f - 0.05f);
  sgd_step(c, 0.1f, {&p, 1});
  EXPECT_FLOAT_EQ(m[0], 0.9f * 0.5f + 0.5f);
  EXPECT_FLOAT_EQ(w[0], 0.95f - 0.1f * 0.95f);
}

TEST(Sgd, NesterovAndWeightDecayExemption) {
  std::vector<float> w = {2.0f}, b = {2.0f}, g = {1.0f}, mw(1), mb(1);
  bool hw = false, hb = false;
  const SgdParam ps[] = {{w.data(), g.data(), mw.data(), &hw, 1, false},
                         {b.data(), g.data(), mb.data(), &hb, 1, true}};
  SgdConfig c;
  c.nesterov = true;
  c.weight_decay = 0.5f;
  c.decay_bn_and_bias = false;
  sgd_step(c, 1.0f, ps);
  // weight: d = 1 + 0.5 * 2 = 2, buf = 2, nesterov d = 2 + 0.9 * 2 = 3.8
  EXPECT_FLOAT_EQ(w[0], 2.0f - 3.8f);
  // bias: exempt from decay: d = 1, buf = 1, d = 1 + 0.9 = 1.9
  EXPECT_FLOAT_EQ(b[0], 2.0f - 1.9f);
}

TEST(LrSchedule, WarmupThenStepOrCosine) {
  LrSchedule s;
  s.base_lr = 0.4;
  s.warmup_steps = 4;
  s.warmup_start_factor = 0.25;
  s.kind = LrSchedule::Kind::step;
  s.milestones = {10, 20};
  EXPECT_DOUBLE_EQ(lr_at(s, 0), 0.1);
  EXPECT_DOUBLE_EQ(lr_at(s, 2), 0.25);
  EXPECT_DOUBLE_EQ(lr_at(s, 4), 0.4);
  EXPECT_NEAR(lr_at(s, 14), 0.04, 1e-15);
  EXPECT_NEAR(lr_at(s, 24), 0.004, 1e-15);
  s.kind = LrSchedule::Kind::cosine;
  s.total_steps = 104;
  EXPECT_DOUBLE_EQ(lr_at(s, 4), 0.4);
  EXPECT_NEAR(lr_at(s, 54), 0.2, 1e-12);
  EXPECT_NEAR(lr_at(s, 104), 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(linear_scaled_lr(0.1, 1024), 0.4);
  EXPECT_ERROR("linear", parse_lr_kind("linear"));
}

}  // namespace
}  // namespace stoker
