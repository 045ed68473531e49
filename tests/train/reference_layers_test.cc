// SPDX-License-Identifier: Apache-2.0
// Exact semantics of the reference layers that a gradient check cannot see: max-pool tie and
// NaN rules, batch norm's running statistics (unbiased variance) and inference mode, in-place
// ReLU, output sizes, and cross-entropy values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "gradcheck.h"
#include "train/reference/activation.h"
#include "train/reference/batchnorm.h"
#include "train/reference/conv.h"
#include "train/reference/loss.h"
#include "train/reference/pool.h"

namespace stoker::ref {
namespace {

TEST(ReferenceLayers, ConvShiftKernelMovesTheImage) {
  // A 3x3 kernel with a single 1 at (0, 0) and padding 1 reads in[y-1][x-1]: a shift.
  const ConvShape s{
      .n = 1, .c = 1, .h = 3, .w = 4, .k = 1, .kh = 3, .kw = 3, .stride = 1, .pad = 1};
  std::vector<float> in(12);
  for (int i = 0; i < 12; ++i) in[static_cast<size_t>(i)] = float(i + 1);
  std::vector<float> w(9, 0.0f);
  w[0] = 1;
  std::vector<float> out(12);
  conv2d_forward(out.data(), in.data(), w.data(), s);
  EXPECT_EQ(out, (std::vector<float>{0, 0, 0, 0, 0, 1, 2, 3, 0, 5, 6, 7}));
}

TEST(ReferenceLayers, ConvOutputSizeIsTorchs) {
  // ResNet's stem on 224: 7x7 stride 2 pad 3 gives 112; 1x1 stride 2 on 56 gives 28.
  EXPECT_EQ((ConvShape{.h = 224, .w = 224, .kh = 7, .kw = 7, .stride = 2, .pad = 3}.oh()), 112);
  EXPECT_EQ((ConvShape{.h = 56, .w = 56, .kh = 1, .kw = 1, .stride = 2, .pad = 0}.ow()), 28);
  EXPECT_EQ((PoolShape{.h = 112, .w = 7}.oh()), 56);
  EXPECT_EQ((PoolShape{.h = 112, .w = 7}.ow()), 4);
}

TEST(ReferenceLayers, MaxPoolTiesGoToTheFirstInScanOrder) {
  // All equal: every window's argmax is its first real (unpadded) element.
  const PoolShape s{.n = 1, .c = 1, .h = 4, .w = 4, .k = 3, .stride = 2, .pad = 1};
  std::vector<float> in(16, 2.0f), out(4);
  std::vector<int64_t> argmax(4);
  maxpool2d_forward(out.data(), argmax.data(), in.data(), s);
  EXPECT_EQ(argmax, (std::vector<int64_t>{0, 1, 4, 5}));
  // Window (1, 1) covers rows 1..3, cols 1..3; its first element is (1, 1) = 5.
  std::vector<float> din(16), dout = {1, 2, 3, 4};
  maxpool2d_backward(din.data(), dout.data(), argmax.data(), s);
  EXPECT_EQ(din, (std::vector<float>{1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(ReferenceLayers, MaxPoolPropagatesNaNAndIgnoresPadding) {
  const PoolShape s{.n = 1, .c = 1, .h = 2, .w = 2, .k = 3, .stride = 2, .pad = 1};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> in = {-5, nan, -7, -6}, out(1);
  std::vector<int64_t> argmax(1);
  maxpool2d_forward(out.data(), argmax.data(), in.data(), s);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_EQ(argmax[0], 1);
  in = {-5, -4, -7, -6};  // all negative: the zero padding must not win
  maxpool2d_forward(out.data(), argmax.data(), in.data(), s);
  EXPECT_EQ(out[0], -4);
  EXPECT_EQ(argmax[0], 1);
}

TEST(ReferenceLayers, BatchNormRunningStatsUseTheUnbiasedVariance) {
  // One channel, values 1, 2, 3, 6: mean 3, biased var 3.5, unbiased var 14/3.
  const BatchNormShape s{.n = 2, .c = 1, .h = 1, .w = 2};
  std::vector<float> in = {1, 2, 3, 6}, out(4), gamma = {2}, beta = {1};
  std::vector<float> mean(1), rstd(1), run_mean = {0.5f}, run_var = {1};
  batchnorm_forward_train(out.data(), mean.data(), rstd.data(), run_mean.data(), run_var.data(),
                          in.data(), gamma.data(), beta.data(), s);
  EXPECT_FLOAT_EQ(mean[0], 3);
  EXPECT_FLOAT_EQ(rstd[0], float(1 / std::sqrt(3.5 + 1e-5)));
  EXPECT_FLOAT_EQ(run_mean[0], 0.9f * 0.5f + 0.1f * 3);
  EXPECT_FLOAT_EQ(run_var[0], float(0.9 + 0.1 * 14.0 / 3));
  EXPECT_FLOAT_EQ(out[3], float(2 * 3 / std::sqrt(3.5 + 1e-5) + 1));

  // Inference mode normalises with the running statistics, not the batch's.
  std::vector<float> infer(4);
  batchnorm_forward_infer(infer.data(), in.data(), gamma.data(), beta.data(), run_mean.data(),
                          run_var.data(), s);
  EXPECT_FLOAT_EQ(infer[0],
                  float(2 * (1 - double(run_mean[0])) / std::sqrt(run_var[0] + 1e-5) + 1));
}

TEST(ReferenceLayers, BatchNormBackwardMayRunInPlace) {
  const BatchNormShape s{.n = 2, .c = 2, .h = 2, .w = 2};
  const std::vector<float> in = test::uniform(16, -1, 1, 5), dout = test::uniform(16, -1, 1, 6);
  std::vector<float> out(16), mean(2), rstd(2), rm(2), rv(2, 1.0f), gamma = {1.5f, 0.5f},
                                                                    beta = {0, 1};
  batchnorm_forward_train(out.data(), mean.data(), rstd.data(), rm.data(), rv.data(), in.data(),
                          gamma.data(), beta.data(), s);
  std::vector<float> din(16), dg(2), db(2), inplace = dout, dg2(2), db2(2);
  batchnorm_backward(din.data(), dg.data(), db.data(), dout.data(), in.data(), gamma.data(),
                     mean.data(), rstd.data(), s);
  batchnorm_backward(inplace.data(), dg2.data(), db2.data(), inplace.data(), in.data(),
                     gamma.data(), mean.data(), rstd.data(), s);
  EXPECT_EQ(inplace, din);
  EXPECT_EQ(dg2, dg);
  EXPECT_EQ(db2, db);
}

TEST(ReferenceLayers, ReluRunsInPlaceAndKeepsNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {-1, 0, 2, nan};
  relu_forward(x.data(), x.data(), 4);
  EXPECT_EQ(x[0], 0);
  EXPECT_EQ(x[1], 0);
  EXPECT_EQ(x[2], 2);
  EXPECT_TRUE(std::isnan(x[3]));
  std::vector<float> g = {5, 6, 7, 8};
  relu_backward(g.data(), g.data(), x.data(), 3);  // in place, from the output
  EXPECT_EQ(g, (std::vector<float>{0, 0, 7, 8}));
}

TEST(ReferenceLayers, CrossEntropyByHand) {
  // Equal logits: every class has p = 1/K, so the loss is log K with or without smoothing.
  const CrossEntropyShape s{.n = 2, .k = 4, .label_smoothing = 0.1f};
  std::vector<float> logits(8, 3.0f), probs(8), d(8);
  const std::vector<int32_t> targets = {1, 3};
  EXPECT_FLOAT_EQ(cross_entropy_forward(probs.data(), logits.data(), targets.data(), s),
                  float(std::log(4.0)));
  cross_entropy_backward(d.data(), probs.data(), targets.data(), s);
  // (p - q) / N with q = 0.9 + 0.025 on the target, 0.025 elsewhere.
  EXPECT_FLOAT_EQ(d[1], float((0.25 - 0.925) / 2));
  EXPECT_FLOAT_EQ(d[0], float((0.25 - 0.025) / 2));

  // Huge logits do not overflow: log-sum-exp is shifted by the max.
  const CrossEntropyShape one{.n = 1, .k = 2, .label_smoothing = 0};
  std::vector<float> big = {1000, 0}, p2(2);
  const std::vector<int32_t> t0 = {0}, t1 = {1};
  EXPECT_FLOAT_EQ(cross_entropy_forward(p2.data(), big.data(), t0.data(), one), 0.0f);
  EXPECT_FLOAT_EQ(cross_entropy_forward(p2.data(), big.data(), t1.data(), one), 1000.0f);
}

TEST(ReferenceLayersDeathTest, BadTargetIsACheckFailure) {
  const CrossEntropyShape s{.n = 1, .k = 3, .label_smoothing = 0};
  std::vector<float> logits(3), probs(3);
  const std::vector<int32_t> bad = {3};
  EXPECT_DEATH(cross_entropy_forward(probs.data(), logits.data(), bad.data(), s), "target 3");
}

}  // namespace
}  // namespace stoker::ref
