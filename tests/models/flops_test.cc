// SPDX-License-Identifier: Apache-2.0
// MAC counts against the published figures (torchvision's model table: 1.81, 3.66, 4.09,
// 7.80, 11.51 GMAC at 224), hand-counted layers, and the trained-image FLOPs convention.
#include "models/flops.h"

#include <gtest/gtest.h>

#include "models/resnet.h"

namespace stoker {
namespace {

ForwardCost cost(int depth, int64_t side, int classes = 1000) {
  ResNetConfig c;
  c.depth = depth;
  c.num_classes = classes;
  const Network net = build_resnet(c);
  return forward_cost(net, infer_shapes(net, side, side));
}

TEST(ModelFlops, ResNet50At224Is4Point09GMac) {
  const ForwardCost c = cost(50, 224);
  EXPECT_NEAR(c.macs / 1e9, 4.09, 0.01 * 4.09);
  EXPECT_DOUBLE_EQ(trained_image_flops(c), 6.0 * static_cast<double>(c.macs));
  EXPECT_NEAR(trained_image_flops(c) / 1e9, 24.5, 0.01 * 24.5);
}

TEST(ModelFlops, EveryDepthMatchesTheModelTable) {
  EXPECT_NEAR(cost(18, 224).macs / 1e9, 1.81, 0.01 * 1.81);
  EXPECT_NEAR(cost(34, 224).macs / 1e9, 3.66, 0.01 * 3.66);
  EXPECT_NEAR(cost(101, 224).macs / 1e9, 7.80, 0.01 * 7.80);
  EXPECT_NEAR(cost(152, 224).macs / 1e9, 11.51, 0.01 * 11.51);
}

TEST(ModelFlops, HandCountedLayers) {
  ResNetConfig c;
  const Network net = build_resnet(c);
  const auto shapes = infer_shapes(net, 224, 224);
  // conv1: 112 * 112 outputs x 64 channels x 3 * 7 * 7 taps.
  EXPECT_EQ(layer_macs(net.layers[0], shapes), int64_t{112} * 112 * 64 * 3 * 49);
  EXPECT_EQ(layer_macs(net.layers[1], shapes), 0);  // batchnorm is not counted
  EXPECT_EQ(layer_macs(net.layers.back(), shapes), int64_t{2048} * 1000);
  // Only fc depends on the class count.
  EXPECT_EQ(cost(50, 224, 1000).macs - cost(50, 224, 10).macs, int64_t{2048} * 990);
}

TEST(ModelFlops, ConvWorkScalesWithArea) {
  const double fc = 2048.0 * 1000;
  // 448 = 2 x 224 exactly through every stride: conv work is exactly 4x.
  EXPECT_DOUBLE_EQ(cost(50, 448).macs - fc, 4.0 * (cost(50, 224).macs - fc));
  EXPECT_LT(cost(50, 64).macs, cost(50, 224).macs / 10);
}

TEST(ModelFlops, ActivationsCountEveryWrittenTensor) {
  // ResNet-18 at 32: small enough to check against a sum written out by stage.
  const ForwardCost c = cost(18, 32, 10);
  // conv1, bn1, relu: 64x16x16 each; maxpool 64x8x8; layer1: 2 blocks x (5 convs/bn/relu + add
  // + relu) at 64x8x8; layer2..4: first block 7 tensors + 2 downsample, second 7.
  const int64_t stem = 3 * 64 * 16 * 16 + 64 * 8 * 8;
  const int64_t l1 = 14 * 64 * 8 * 8;
  const int64_t l2 = 16 * 128 * 4 * 4, l3 = 16 * 256 * 2 * 2, l4 = 16 * 512 * 1 * 1;
  EXPECT_EQ(c.activations, stem + l1 + l2 + l3 + l4 + 512 + 10);
}

}  // namespace
}  // namespace stoker
