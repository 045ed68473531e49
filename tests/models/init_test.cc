// SPDX-License-Identifier: Apache-2.0
// Initialisation: torchvision's distributions (Kaiming normal fan_out for convs, BN 1/0,
// nn.Linear's uniform bounds), zero_init_residual on exactly the right tensors, the
// Box-Muller sampler's moments, and determinism from the seed.
#include "models/init.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "models/normal.h"
#include "models/resnet.h"

namespace stoker {
namespace {

Network resnet(int depth, int classes = 1000, bool zero_init = false) {
  ResNetConfig c;
  c.depth = depth;
  c.num_classes = classes;
  c.zero_init_residual = zero_init;
  return build_resnet(c);
}

std::vector<float> values(const Network& net, const std::string& name, uint64_t seed = 1) {
  const int i = param_index(net, name);
  EXPECT_GE(i, 0) << name;
  std::vector<float> v(numel(net.params.at(i)));
  init_param(net, i, seed, v);
  return v;
}

struct Moments {
  double mean = 0, std = 0, max_abs = 0;
};
Moments moments(const std::vector<float>& v) {
  Moments m;
  for (const float x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  for (const float x : v) {
    m.std += (x - m.mean) * (x - m.mean);
    m.max_abs = std::max(m.max_abs, static_cast<double>(std::fabs(x)));
  }
  m.std = std::sqrt(m.std / static_cast<double>(v.size() - 1));
  return m;
}

TEST(ModelInit, ConvWeightsAreKaimingNormalFanOut) {
  const Network net = resnet(50);
  struct Case {
    const char* name;
    double fan_out;
  };
  for (const Case c : {Case{"conv1.weight", 64 * 49}, Case{"layer4.0.conv2.weight", 512 * 9},
                       Case{"layer3.1.conv3.weight", 1024}, Case{"layer1.0.conv1.weight", 64}}) {
    const std::vector<float> v = values(net, c.name);
    const Moments m = moments(v);
    const double expected = std::sqrt(2.0 / c.fan_out);
    // conv1 has 9408 samples: the std's sampling error is ~0.7%; allow 3%.
    EXPECT_NEAR(m.std, expected, 0.03 * expected) << c.name;
    EXPECT_NEAR(m.mean, 0.0, 5 * expected / std::sqrt(static_cast<double>(v.size()))) << c.name;
  }
}

TEST(ModelInit, BatchNormStartsAtOneAndZero) {
  const Network net = resnet(18);
  for (const float x : values(net, "layer2.1.bn1.weight")) ASSERT_EQ(x, 1.0f);
  for (const float x : values(net, "layer2.1.bn1.bias")) ASSERT_EQ(x, 0.0f);
  for (const float x : values(net, "layer2.1.bn1.running_mean")) ASSERT_EQ(x, 0.0f);
  for (const float x : values(net, "layer2.1.bn1.running_var")) ASSERT_EQ(x, 1.0f);
  for (const float x : values(net, "layer2.1.bn2.weight")) ASSERT_EQ(x, 1.0f);  // no zero init
  for (const float x : values(net, "layer2.0.downsample.1.weight")) ASSERT_EQ(x, 1.0f);
  std::vector<int64_t> count(1, 42);
  init_param(net, param_index(net, "bn1.num_batches_tracked"), 1, count);
  EXPECT_EQ(count[0], 0);
}

TEST(ModelInit, FcIsNnLinearUniform) {
  const Network net = resnet(50, 1000);
  const double bound = 1.0 / std::sqrt(2048.0);
  for (const char* name : {"fc.weight", "fc.bias"}) {
    const Moments m = moments(values(net, name));
    EXPECT_LE(m.max_abs, bound) << name;
    EXPECT_GT(m.max_abs, 0.99 * bound) << name;  // the whole range is used
    EXPECT_NEAR(m.std, bound / std::sqrt(3.0), 0.05 * bound / std::sqrt(3.0)) << name;
  }
  const Network r18 = resnet(18, 10);
  EXPECT_LE(moments(values(r18, "fc.weight")).max_abs, 1.0 / std::sqrt(512.0));
  EXPECT_GT(moments(values(r18, "fc.weight")).max_abs, 0.9 / std::sqrt(512.0));
}

TEST(ModelInit, ZeroInitResidualZeroesTheLastBnOfEachBranchOnly) {
  for (const int depth : {18, 50, 152}) {
    const Network plain = resnet(depth);
    const Network zero = resnet(depth, 1000, true);
    ASSERT_EQ(plain.params.size(), zero.params.size());
    const std::string last_bn = depth < 50 ? ".bn2.weight" : ".bn3.weight";
    int zeroed = 0;
    for (size_t i = 0; i < zero.params.size(); ++i) {
      const std::string& name = zero.params[i].name;
      const bool should = name.starts_with("layer") && name.ends_with(last_bn);
      if (zero.params[i].dtype != ParamType::f32) continue;
      std::vector<float> a(numel(zero.params[i])), b(a.size());
      init_param(zero, i, 3, a);
      init_param(plain, i, 3, b);
      if (should) {
        ++zeroed;
        for (const float x : a) ASSERT_EQ(x, 0.0f) << name;
        for (const float x : b) ASSERT_EQ(x, 1.0f) << name;
      } else {
        EXPECT_EQ(a, b) << name;  // everything else untouched
        if (zero.params[i].shape.size() == 1 && name.ends_with(".weight")) {
          for (const float x : a) ASSERT_EQ(x, 1.0f) << name;  // other BNs, downsample's too
        }
      }
    }
    const int blocks = depth == 18 ? 8 : depth == 50 ? 16 : 50;
    EXPECT_EQ(zeroed, blocks) << depth;
  }
}

TEST(ModelInit, SameSeedSameValuesAndIndependentOfClassCount) {
  const Network a = resnet(50, 1000), b = resnet(50, 10);
  EXPECT_EQ(values(a, "layer3.2.conv2.weight", 7), values(a, "layer3.2.conv2.weight", 7));
  EXPECT_NE(values(a, "layer3.2.conv2.weight", 7), values(a, "layer3.2.conv2.weight", 8));
  EXPECT_EQ(values(a, "layer3.2.conv2.weight", 7), values(b, "layer3.2.conv2.weight", 7));
  // Two tensors of one shape draw different values.
  EXPECT_NE(values(a, "layer3.1.conv2.weight", 7), values(a, "layer3.2.conv2.weight", 7));
  EXPECT_NE(values(a, "fc.weight", 7), values(b, "fc.weight", 7));  // shape differs
}

TEST(ModelInit, BoxMullerHasNormalMoments) {
  Rng rng(12345);
  std::vector<float> v(1'000'001);  // odd: the last value comes from a half-used pair
  fill_normal(rng, 2.0, v);
  const Moments m = moments(v);
  EXPECT_NEAR(m.mean, 0.0, 0.01);
  EXPECT_NEAR(m.std, 2.0, 0.01);
  double within1 = 0, within2 = 0, kurt = 0;
  for (const float x : v) {
    within1 += std::fabs(x) < 2.0;
    within2 += std::fabs(x) < 4.0;
    kurt += std::pow(x / 2.0, 4);
  }
  const double n = static_cast<double>(v.size());
  EXPECT_NEAR(within1 / n, 0.6827, 0.003);
  EXPECT_NEAR(within2 / n, 0.9545, 0.002);
  EXPECT_NEAR(kurt / n, 3.0, 0.05);
  EXPECT_NE(v.back(), 0.0f);
}

}  // namespace
}  // namespace stoker
