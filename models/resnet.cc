// SPDX-License-Identifier: Apache-2.0
// Builds the ResNet description in the order torchvision's modules run (layers) and
// register (parameters), so state_dict keys come out in torchvision's order by construction.
#include "models/resnet.h"

#include <cmath>
#include <string>
#include <utility>

#include "common/error.h"

namespace stoker {

namespace {

struct Stages {
  bool bottleneck = false;
  int blocks[4] = {};
};

Stages stages_for(int depth) {
  switch (depth) {
    case 18:
      return {false, {2, 2, 2, 2}};
    case 34:
      return {false, {3, 4, 6, 3}};
    case 50:
      return {true, {3, 4, 6, 3}};
    case 101:
      return {true, {3, 4, 23, 3}};
    case 152:
      return {true, {3, 8, 36, 3}};
  }
  fail("ResNet depth {}: expected one of 18, 34, 50, 101, 152", depth);
}

// A parameter owned by the layer about to be pushed.
int add_param(Network& net, std::string name, std::vector<int64_t> shape, bool trainable, Init init,
              ParamType dtype = ParamType::f32) {
  Param p;
  p.name = std::move(name);
  p.shape = std::move(shape);
  p.dtype = dtype;
  p.trainable = trainable;
  p.init = init;
  p.layer = static_cast<int>(net.layers.size());
  net.params.push_back(std::move(p));
  return static_cast<int>(net.params.size()) - 1;
}

// Appends the layer, gives it the next tensor id, returns that id.
int push(Network& net, Layer layer) {
  layer.output = static_cast<int>(net.tensors.size());
  net.tensors.push_back(layer.name);
  net.layers.push_back(std::move(layer));
  return net.layers.back().output;
}

Layer make(LayerKind kind, std::string name, std::vector<int> inputs) {
  Layer l;
  l.kind = kind;
  l.name = std::move(name);
  l.inputs = std::move(inputs);
  return l;
}

// torchvision's convolutions have no bias; ResNet.__init__ draws their weights with
// kaiming_normal_(mode="fan_out", nonlinearity="relu"): std = sqrt(2 / (out * k * k)).
int conv(Network& net, std::string name, int x, int in_c, int out_c, int k, int stride,
         int padding) {
  Layer l = make(LayerKind::conv, name, {x});
  l.in_channels = in_c;
  l.out_channels = out_c;
  l.kernel = k;
  l.stride = stride;
  l.padding = padding;
  const double fan_out = static_cast<double>(out_c) * k * k;
  l.weight = add_param(net, name + ".weight", {out_c, in_c, k, k}, true,
                       {Init::Kind::normal, std::sqrt(2.0 / fan_out)});
  return push(net, std::move(l));
}

// nn.BatchNorm2d's defaults (eps 1e-5, momentum 0.1, affine, tracking running stats), with
// ResNet.__init__'s constant weight 1 and bias 0, or weight 0 for zero_init_residual.
int batchnorm(Network& net, std::string name, int x, int c, bool zero_weight = false) {
  Layer l = make(LayerKind::batchnorm, name, {x});
  l.in_channels = c;
  l.out_channels = c;
  l.eps = 1e-5;
  l.momentum = 0.1;
  l.weight = add_param(net, name + ".weight", {c}, true,
                       {zero_weight ? Init::Kind::zeros : Init::Kind::ones, 0});
  l.bias_param = add_param(net, name + ".bias", {c}, true, {Init::Kind::zeros, 0});
  l.running_mean = add_param(net, name + ".running_mean", {c}, false, {Init::Kind::zeros, 0});
  l.running_var = add_param(net, name + ".running_var", {c}, false, {Init::Kind::ones, 0});
  l.num_batches_tracked = add_param(net, name + ".num_batches_tracked", {}, false,
                                    {Init::Kind::zeros, 0}, ParamType::i64);
  return push(net, std::move(l));
}

int relu(Network& net, std::string name, int x) {
  return push(net, make(LayerKind::relu, std::move(name), {x}));
}

int add(Network& net, std::string name, int branch, int shortcut) {
  return push(net, make(LayerKind::add, std::move(name), {branch, shortcut}));
}

// torchvision's downsample: 1x1 conv with the block's stride, then BN; only when the shape
// changes (stride != 1 or a different channel count).
int shortcut(Network& net, const std::string& p, int x, int in_c, int out_c, int stride) {
  if (stride == 1 && in_c == out_c) return x;
  const int y = conv(net, p + "downsample.0", x, in_c, out_c, 1, stride, 0);
  return batchnorm(net, p + "downsample.1", y, out_c);
}

// BasicBlock: 3x3 (stride) -> BN -> relu -> 3x3 -> BN, + shortcut, relu. Names of the relu
// layers are ours: reluK follows bnK (the last one after the add).
int basic_block(Network& net, const std::string& p, int x, int in_c, int planes, int stride,
                bool zero_init) {
  int y = conv(net, p + "conv1", x, in_c, planes, 3, stride, 1);
  y = batchnorm(net, p + "bn1", y, planes);
  y = relu(net, p + "relu1", y);
  y = conv(net, p + "conv2", y, planes, planes, 3, 1, 1);
  y = batchnorm(net, p + "bn2", y, planes, zero_init);
  const int s = shortcut(net, p, x, in_c, planes, stride);
  y = add(net, p + "add", y, s);
  return relu(net, p + "relu2", y);
}

// Bottleneck (v1.5): 1x1 -> BN -> relu -> 3x3 (stride) -> BN -> relu -> 1x1 (x4) -> BN,
// + shortcut, relu.
int bottleneck(Network& net, const std::string& p, int x, int in_c, int planes, int stride,
               bool zero_init) {
  const int out_c = planes * 4;
  int y = conv(net, p + "conv1", x, in_c, planes, 1, 1, 0);
  y = batchnorm(net, p + "bn1", y, planes);
  y = relu(net, p + "relu1", y);
  y = conv(net, p + "conv2", y, planes, planes, 3, stride, 1);
  y = batchnorm(net, p + "bn2", y, planes);
  y = relu(net, p + "relu2", y);
  y = conv(net, p + "conv3", y, planes, out_c, 1, 1, 0);
  y = batchnorm(net, p + "bn3", y, out_c, zero_init);
  const int s = shortcut(net, p, x, in_c, out_c, stride);
  y = add(net, p + "add", y, s);
  return relu(net, p + "relu3", y);
}

}  // namespace

ResNetConfig parse_resnet_arch(std::string_view arch) {
  for (const int depth : {18, 34, 50, 101, 152}) {
    if (arch == "resnet" + std::to_string(depth)) {
      ResNetConfig c;
      c.depth = depth;
      return c;
    }
  }
  fail("model '{}': expected resnet18, resnet34, resnet50, resnet101 or resnet152", arch);
}

Network build_resnet(const ResNetConfig& config) {
  const Stages stages = stages_for(config.depth);
  if (config.num_classes < 1) {
    fail("resnet{}: {} classes: expected at least 1", config.depth, config.num_classes);
  }
  Network net;
  net.name = "resnet" + std::to_string(config.depth);
  net.in_channels = 3;
  net.num_classes = config.num_classes;
  net.tensors.push_back("input");

  int x = conv(net, "conv1", 0, 3, 64, 7, 2, 3);
  x = batchnorm(net, "bn1", x, 64);
  x = relu(net, "relu", x);
  Layer pool = make(LayerKind::maxpool, "maxpool", {x});
  pool.kernel = 3;
  pool.stride = 2;
  pool.padding = 1;
  x = push(net, std::move(pool));

  const int expansion = stages.bottleneck ? 4 : 1;
  int in_c = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int planes = 64 << stage;
    for (int b = 0; b < stages.blocks[stage]; ++b) {
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(b) + ".";
      const int stride = (stage > 0 && b == 0) ? 2 : 1;
      x = stages.bottleneck
              ? bottleneck(net, p, x, in_c, planes, stride, config.zero_init_residual)
              : basic_block(net, p, x, in_c, planes, stride, config.zero_init_residual);
      in_c = planes * expansion;
    }
  }

  x = push(net, make(LayerKind::global_avgpool, "avgpool", {x}));
  // nn.Linear's own reset_parameters (ResNet.__init__ leaves it alone): kaiming_uniform_
  // with a = sqrt(5) gives the weight bound 1/sqrt(fan_in); the bias uses the same bound.
  Layer fc = make(LayerKind::fc, "fc", {x});
  fc.in_channels = in_c;
  fc.out_channels = config.num_classes;
  fc.bias = true;
  const Init linear{Init::Kind::uniform, 1.0 / std::sqrt(static_cast<double>(in_c))};
  fc.weight = add_param(net, "fc.weight", {config.num_classes, in_c}, true, linear);
  fc.bias_param = add_param(net, "fc.bias", {config.num_classes}, true, linear);
  push(net, std::move(fc));
  return net;
}

}  // namespace stoker
