// SPDX-License-Identifier: Apache-2.0
// Output shapes per input size by torch's rules: the classic 224 pyramid, small, odd and
// non-square inputs, the smallest accepted input, and errors naming the size.
#include "models/shapes.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "common/error.h"
#include "models/resnet.h"
#include "test_util.h"

namespace stoker {
namespace {

Network resnet(int depth) {
  ResNetConfig c;
  c.depth = depth;
  return build_resnet(c);
}

std::string shape_of(const Network& net, const std::vector<ActShape>& shapes,
                     const std::string& tensor) {
  for (size_t t = 0; t < net.tensors.size(); ++t) {
    if (net.tensors[t] == tensor) return to_string(shapes[t]);
  }
  return "no tensor " + tensor;
}

TEST(ModelShapes, ResNet50At224) {
  const Network net = resnet(50);
  const auto s = infer_shapes(net, 224, 224);
  EXPECT_EQ(shape_of(net, s, "input"), "3x224x224");
  EXPECT_EQ(shape_of(net, s, "conv1"), "64x112x112");
  EXPECT_EQ(shape_of(net, s, "maxpool"), "64x56x56");
  EXPECT_EQ(shape_of(net, s, "layer1.0.conv1"), "64x56x56");
  EXPECT_EQ(shape_of(net, s, "layer1.2.relu3"), "256x56x56");
  EXPECT_EQ(shape_of(net, s, "layer2.0.conv1"), "128x56x56");  // stride is on conv2
  EXPECT_EQ(shape_of(net, s, "layer2.0.conv2"), "128x28x28");
  EXPECT_EQ(shape_of(net, s, "layer2.3.relu3"), "512x28x28");
  EXPECT_EQ(shape_of(net, s, "layer3.5.relu3"), "1024x14x14");
  EXPECT_EQ(shape_of(net, s, "layer4.2.relu3"), "2048x7x7");  // the final 7x7
  EXPECT_EQ(shape_of(net, s, "avgpool"), "2048x1x1");
  EXPECT_EQ(shape_of(net, s, "fc"), "1000x1x1");
}

TEST(ModelShapes, SmallOddAndNonSquareInputs) {
  const Network r18 = resnet(18);
  auto s = infer_shapes(r18, 64, 64);
  EXPECT_EQ(shape_of(r18, s, "layer4.1.relu2"), "512x2x2");
  const Network r50 = resnet(50);
  s = infer_shapes(r50, 64, 64);
  EXPECT_EQ(shape_of(r50, s, "layer4.2.relu3"), "2048x2x2");
  // 225: 113 after conv1, 57 after maxpool, then 29, 15, 8 (floor((x + 2 - 3) / 2) + 1).
  s = infer_shapes(r50, 225, 225);
  EXPECT_EQ(shape_of(r50, s, "conv1"), "64x113x113");
  EXPECT_EQ(shape_of(r50, s, "maxpool"), "64x57x57");
  EXPECT_EQ(shape_of(r50, s, "layer4.2.relu3"), "2048x8x8");
  s = infer_shapes(r50, 224, 160);
  EXPECT_EQ(shape_of(r50, s, "layer4.2.relu3"), "2048x7x5");
  EXPECT_EQ(shape_of(r50, s, "fc"), "1000x1x1");
}

TEST(ModelShapes, OnePixelIsTheSmallestInput) {
  // Every window then still overlaps the image, as torch accepts (eval mode).
  const Network net = resnet(152);
  const auto s = infer_shapes(net, 1, 1);
  for (size_t t = 1; t + 1 < s.size(); ++t) {
    EXPECT_EQ(s[t].h, 1) << net.tensors[t];
    EXPECT_EQ(s[t].w, 1) << net.tensors[t];
  }
}

TEST(ModelShapes, TooSmallOrTooLargeInputIsAnErrorNamingTheSize) {
  const Network net = resnet(50);
  using P = std::pair<int64_t, int64_t>;
  for (const auto& [h, w] : {P{0, 0}, P{224, 0}, P{-3, 224}}) {
    try {
      infer_shapes(net, h, w);
      ADD_FAILURE() << h << "x" << w << " accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(std::to_string(h) + "x" + std::to_string(w)), std::string::npos) << msg;
      EXPECT_NE(msg.find("too small"), std::string::npos) << msg;
    }
  }
  EXPECT_ERROR(std::to_string(kMaxInputSide + 1), infer_shapes(net, kMaxInputSide + 1, 224));
  // The largest allowed side works, and gives the logits' shape, not just no error.
  const std::vector<ActShape> s = infer_shapes(net, kMaxInputSide, 3);
  EXPECT_EQ(s.back().c, net.num_classes);
  EXPECT_EQ(s.back().h, 1);
}

TEST(ModelShapes, WindowSmallerThanKernelIsAnErrorNamingTheLayer) {
  // Not reachable with ResNet's paddings; a 7x7 window without padding shows the rule.
  Network net = resnet(18);
  net.layers[0].padding = 0;
  try {
    infer_shapes(net, 5, 9);
    ADD_FAILURE() << "5x9 accepted by an unpadded 7x7 conv";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("5x9"), std::string::npos) << msg;
    EXPECT_NE(msg.find("conv1"), std::string::npos) << msg;
  }
  EXPECT_EQ(to_string(infer_shapes(net, 7, 7)[1]), "64x1x1");
}

}  // namespace
}  // namespace stoker
