// SPDX-License-Identifier: Apache-2.0
// A network as plain data: the layers in execution order, the tensors they read and write,
// and the parameters and buffers in state_dict order with their initialisation. It is what
// a backend (oneDNN, cuDNN) walks; it holds no values, no shapes for a given input size
// (models/shapes.h) and no backend knowledge.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stoker {

enum class LayerKind { conv, batchnorm, relu, maxpool, global_avgpool, fc, add };
std::string_view kind_name(LayerKind kind);

// How a parameter or buffer starts. Filled by init_param (models/init.h).
struct Init {
  enum class Kind { zeros, ones, normal, uniform };
  Kind kind = Kind::zeros;
  double scale = 0;  // normal: the standard deviation; uniform: the bound (values in [-b, b))
};
std::string_view init_name(Init::Kind kind);

enum class ParamType { f32, i64 };  // i64 only for BatchNorm's num_batches_tracked, as in torch

struct Param {
  std::string name;            // the torchvision state_dict key, e.g. "layer1.0.bn1.weight"
  std::vector<int64_t> shape;  // torch's shape; empty for a scalar (num_batches_tracked)
  ParamType dtype = ParamType::f32;
  bool trainable = true;  // false for buffers: running_mean, running_var, num_batches_tracked
  Init init;
  int layer = -1;  // index of the layer that owns it
};
int64_t numel(const Param& p);

// One layer. Tensors are numbered: 0 is the input image batch (N x 3 x H x W) and layer i
// writes tensor i + 1; every tensor is written once (backends may still run relu and add in
// place). Fields that a kind does not use keep their defaults.
struct Layer {
  LayerKind kind = LayerKind::relu;
  std::string name;         // torchvision's module path ("layer1.0.conv1"); relu/add: our own
  std::vector<int> inputs;  // tensor ids read; add: the residual branch, then the shortcut
  int output = -1;          // tensor id written
  // conv, fc: channels in and out; batchnorm: both are the channel count.
  int in_channels = 0;
  int out_channels = 0;
  // conv, maxpool: square kernel, stride and zero (maxpool: -inf) padding, dilation 1.
  int kernel = 0;
  int stride = 1;
  int padding = 0;
  int groups = 1;       // conv
  bool bias = false;    // conv, fc: whether the layer adds a bias
  double eps = 0;       // batchnorm: added to the variance
  double momentum = 0;  // batchnorm: running stat update, torch's convention (new weight)
  // Indices into Network::params, -1 when the layer has none of that kind.
  int weight = -1;
  int bias_param = -1;
  int running_mean = -1;
  int running_var = -1;
  int num_batches_tracked = -1;
};

struct Network {
  std::string name;  // "resnet50"
  int in_channels = 3;
  int num_classes = 0;
  std::vector<std::string> tensors;  // tensors[0] = "input"; tensors[i + 1] = layers[i].name
  std::vector<Layer> layers;         // execution order of torchvision's forward()
  std::vector<Param> params;         // state_dict order: parameters and buffers interleaved
};

int64_t trainable_count(const Network& net);  // torchvision's sum of parameters().numel()
int64_t buffer_count(const Network& net);     // elements of running stats and counters
int param_index(const Network& net, std::string_view name);  // -1 when absent

}  // namespace stoker
