// SPDX-License-Identifier: Apache-2.0
// The ResNet description against torchvision 0.14: parameter counts, state_dict keys and
// order, block structure (v1.5 stride placement, downsample), and the tensor graph.
#include "models/resnet.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "test_util.h"

namespace stoker {
namespace {

Network resnet(int depth, int classes = 1000, bool zero_init = false) {
  ResNetConfig c;
  c.depth = depth;
  c.num_classes = classes;
  c.zero_init_residual = zero_init;
  return build_resnet(c);
}

const Layer& layer(const Network& net, const std::string& name) {
  for (const Layer& l : net.layers) {
    if (l.name == name) return l;
  }
  ADD_FAILURE() << "no layer " << name;
  return net.layers.front();
}

TEST(ResNet, ParameterCountsEqualTorchvision) {
  // sum(p.numel() for p in torchvision.models.resnetX().parameters())
  EXPECT_EQ(trainable_count(resnet(18)), 11'689'512);
  EXPECT_EQ(trainable_count(resnet(34)), 21'797'672);
  EXPECT_EQ(trainable_count(resnet(50)), 25'557'032);
  EXPECT_EQ(trainable_count(resnet(101)), 44'549'160);
  EXPECT_EQ(trainable_count(resnet(152)), 60'192'808);
  // Only fc depends on the class count: 2048 * K + K for ResNet-50.
  EXPECT_EQ(trainable_count(resnet(50, 10)), 25'557'032 - 2049 * 990);
  EXPECT_EQ(trainable_count(resnet(18, 1)), 11'689'512 - 513 * 999);
}

TEST(ResNet, StateDictKeysInTorchvisionOrder) {
  const Network net = resnet(50);
  ASSERT_EQ(net.params.size(), 320u);  // len(resnet50().state_dict())
  const std::vector<std::string> head = {"conv1.weight",
                                         "bn1.weight",
                                         "bn1.bias",
                                         "bn1.running_mean",
                                         "bn1.running_var",
                                         "bn1.num_batches_tracked",
                                         "layer1.0.conv1.weight",
                                         "layer1.0.bn1.weight",
                                         "layer1.0.bn1.bias",
                                         "layer1.0.bn1.running_mean"};
  for (size_t i = 0; i < head.size(); ++i) EXPECT_EQ(net.params[i].name, head[i]) << i;
  // A bottleneck registers conv1, bn1, conv2, bn2, conv3, bn3, then downsample.
  const int bn3 = param_index(net, "layer1.0.bn3.num_batches_tracked");
  ASSERT_GE(bn3, 0);
  EXPECT_EQ(net.params[bn3 + 1].name, "layer1.0.downsample.0.weight");
  EXPECT_EQ(net.params[bn3 + 2].name, "layer1.0.downsample.1.weight");
  EXPECT_EQ(net.params[bn3 + 6].name, "layer1.0.downsample.1.num_batches_tracked");
  EXPECT_EQ(net.params[bn3 + 7].name, "layer1.1.conv1.weight");
  EXPECT_EQ(net.params[318].name, "fc.weight");
  EXPECT_EQ(net.params[319].name, "fc.bias");
  EXPECT_EQ(param_index(net, "layer4.2.bn3.weight") + 5, 318);
  EXPECT_EQ(param_index(net, "layer1.1.downsample.0.weight"), -1);  // shape unchanged

  int trainable = 0;
  for (const Param& p : net.params) {
    const bool buffer = p.name.ends_with("running_mean") || p.name.ends_with("running_var") ||
                        p.name.ends_with("num_batches_tracked");
    EXPECT_EQ(p.trainable, !buffer) << p.name;
    EXPECT_EQ(p.dtype, p.name.ends_with("num_batches_tracked") ? ParamType::i64 : ParamType::f32);
    trainable += p.trainable ? 1 : 0;
  }
  EXPECT_EQ(trainable, 161);  // len(list(resnet50().parameters()))
  EXPECT_EQ(resnet(18).params.size(), 122u);
}

TEST(ResNet, ShapesOfParameters) {
  const Network net = resnet(50, 7);
  auto shape = [&](const char* name) { return net.params.at(param_index(net, name)).shape; };
  using S = std::vector<int64_t>;
  EXPECT_EQ(shape("conv1.weight"), (S{64, 3, 7, 7}));
  EXPECT_EQ(shape("bn1.num_batches_tracked"), S{});
  EXPECT_EQ(shape("layer1.0.conv1.weight"), (S{64, 64, 1, 1}));
  EXPECT_EQ(shape("layer1.0.conv3.weight"), (S{256, 64, 1, 1}));
  EXPECT_EQ(shape("layer1.0.downsample.0.weight"), (S{256, 64, 1, 1}));
  EXPECT_EQ(shape("layer2.0.conv2.weight"), (S{128, 128, 3, 3}));
  EXPECT_EQ(shape("layer4.2.bn3.running_var"), (S{2048}));
  EXPECT_EQ(shape("fc.weight"), (S{7, 2048}));
  EXPECT_EQ(shape("fc.bias"), (S{7}));
  const Network r18 = resnet(18, 3);
  EXPECT_EQ(r18.params.at(param_index(r18, "fc.weight")).shape, (S{3, 512}));
  EXPECT_EQ(param_index(r18, "layer1.0.downsample.0.weight"), -1);  // 64 -> 64, stride 1
  EXPECT_GE(param_index(r18, "layer2.0.downsample.0.weight"), 0);
  EXPECT_EQ(param_index(r18, "layer1.0.conv3.weight"), -1);  // basic blocks: two convs
}

TEST(ResNet, BottleneckStrideOnTheThreeByThree) {
  const Network net = resnet(50);
  EXPECT_EQ(layer(net, "layer2.0.conv1").stride, 1);
  EXPECT_EQ(layer(net, "layer2.0.conv2").stride, 2);
  EXPECT_EQ(layer(net, "layer2.0.conv2").kernel, 3);
  EXPECT_EQ(layer(net, "layer2.0.conv2").padding, 1);
  EXPECT_EQ(layer(net, "layer2.0.conv3").stride, 1);
  EXPECT_EQ(layer(net, "layer2.0.downsample.0").stride, 2);
  EXPECT_EQ(layer(net, "layer2.0.downsample.0").padding, 0);
  EXPECT_EQ(layer(net, "layer1.0.conv2").stride, 1);
  EXPECT_EQ(layer(net, "layer1.0.downsample.0").stride, 1);
  EXPECT_EQ(layer(net, "conv1").kernel, 7);
  EXPECT_EQ(layer(net, "conv1").stride, 2);
  EXPECT_EQ(layer(net, "conv1").padding, 3);
  const Network r34 = resnet(34);
  EXPECT_EQ(layer(r34, "layer3.0.conv1").stride, 2);  // basic block: on the first 3x3
  EXPECT_EQ(layer(r34, "layer3.0.conv2").stride, 1);
  for (const Layer& l : net.layers) {
    if (l.kind != LayerKind::conv) continue;
    EXPECT_FALSE(l.bias) << l.name;
    EXPECT_EQ(l.groups, 1) << l.name;
    EXPECT_EQ(l.padding, l.kernel / 2) << l.name;
  }
  EXPECT_TRUE(layer(net, "fc").bias);
}

TEST(ResNet, ExecutionOrderOfABlockWithDownsample) {
  const Network net = resnet(50);
  size_t i = 0;
  while (net.layers[i].name != "layer1.0.conv1") ++i;
  const std::vector<std::string> order = {
      "layer1.0.conv1",        "layer1.0.bn1",          "layer1.0.relu1", "layer1.0.conv2",
      "layer1.0.bn2",          "layer1.0.relu2",        "layer1.0.conv3", "layer1.0.bn3",
      "layer1.0.downsample.0", "layer1.0.downsample.1", "layer1.0.add",   "layer1.0.relu3",
      "layer1.1.conv1"};
  for (size_t k = 0; k < order.size(); ++k) EXPECT_EQ(net.layers[i + k].name, order[k]);
  EXPECT_EQ(net.layers[i - 1].name, "maxpool");
  // The add reads the branch (bn3) and the shortcut (downsample.1); without a downsample
  // the shortcut is the block's input.
  const Layer& add0 = layer(net, "layer1.0.add");
  ASSERT_EQ(add0.inputs.size(), 2u);
  EXPECT_EQ(net.tensors[add0.inputs[0]], "layer1.0.bn3");
  EXPECT_EQ(net.tensors[add0.inputs[1]], "layer1.0.downsample.1");
  EXPECT_EQ(net.tensors[layer(net, "layer1.0.downsample.0").inputs[0]], "maxpool");
  const Layer& add1 = layer(net, "layer1.1.add");
  EXPECT_EQ(net.tensors[add1.inputs[1]], "layer1.0.relu3");
  EXPECT_EQ(net.layers.back().name, "fc");
  EXPECT_EQ(net.layers[net.layers.size() - 2].kind, LayerKind::global_avgpool);
}

TEST(ResNet, EveryTensorWrittenOnceBeforeItIsRead) {
  for (const int depth : {18, 34, 50, 101, 152}) {
    const Network net = resnet(depth);
    ASSERT_EQ(net.tensors.size(), net.layers.size() + 1);
    EXPECT_EQ(net.tensors[0], "input");
    std::vector<int> readers(net.tensors.size(), 0);
    for (size_t i = 0; i < net.layers.size(); ++i) {
      const Layer& l = net.layers[i];
      EXPECT_EQ(l.output, static_cast<int>(i) + 1);
      EXPECT_EQ(net.tensors[l.output], l.name);
      EXPECT_EQ(l.inputs.size(), l.kind == LayerKind::add ? 2u : 1u) << l.name;
      for (const int t : l.inputs) {
        EXPECT_LT(t, l.output) << l.name;
        ++readers[t];
      }
      for (const int p :
           {l.weight, l.bias_param, l.running_mean, l.running_var, l.num_batches_tracked}) {
        if (p >= 0) {
          EXPECT_EQ(net.params[p].layer, static_cast<int>(i)) << net.params[p].name;
        }
      }
    }
    // Only the logits are left unread: no dangling branch.
    for (size_t t = 0; t + 1 < readers.size(); ++t) EXPECT_GE(readers[t], 1) << net.tensors[t];
    EXPECT_EQ(readers.back(), 0);
  }
}

TEST(ResNet, BadArchOrClassesAreErrors) {
  EXPECT_EQ(parse_resnet_arch("resnet101").depth, 101);
  EXPECT_ERROR("resnet51", parse_resnet_arch("resnet51"));
  EXPECT_ERROR("ResNet50", parse_resnet_arch("ResNet50"));
  ResNetConfig c;
  c.depth = 26;
  EXPECT_ERROR("26", build_resnet(c));
  c.depth = 50;
  c.num_classes = 0;
  try {
    build_resnet(c);
    ADD_FAILURE() << "0 classes accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("0 classes"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stoker
