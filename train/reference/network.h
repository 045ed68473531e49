// SPDX-License-Identifier: Apache-2.0
// A whole network (models::Network, e.g. a ResNet) run in fp32 NCHW on the naive reference
// layers: training-mode forward (batch statistics, running-stat update), softmax
// cross-entropy, backward to every trainable parameter; and the eval-mode forward. The oracle
// a backend's whole training step is judged against. Clarity over speed; not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "models/network.h"
#include "models/shapes.h"
#include "train/checkpoint.h"

namespace stoker::ref {

// Everything one network needs for a batch of N images of H x W, each buffer its own
// allocation, indexed like the description: parameters and their gradients by
// Network::params index, activations and their gradients by tensor id.
struct ReferenceNet {
  Network net;
  int64_t batch = 0, height = 0, width = 0;
  std::vector<ActShape> shapes;  // per tensor id, per image (models/shapes.h)

  std::vector<std::vector<float>> params;    // f32 params and running stats; empty for i64
  std::vector<std::vector<int64_t>> counts;  // num_batches_tracked (1 value); empty otherwise
  std::vector<std::vector<float>> grads;     // trainable params: same shape; empty otherwise

  std::vector<std::vector<float>> acts;   // N x C x H x W per tensor id (fc: N x classes)
  std::vector<std::vector<float>> dacts;  // gradients of acts; dacts[0] stays empty
  // Saved by the training forward for the backward, per layer (empty where unused).
  std::vector<std::vector<float>> bn_mean, bn_rstd;  // batchnorm: C each
  std::vector<std::vector<int64_t>> argmax;          // maxpool: N x C x OH x OW
  std::vector<float> probs;                          // N x classes, softmax of the logits
  std::vector<float> scratch;                        // largest activation: a layer's din
};

// Sizes every buffer for `batch` images of height x width; parameters start at zero (call
// load_parameters). stoker::Error when the size is too small for the network.
ReferenceNet make_reference_net(const Network& net, int64_t batch, int64_t height, int64_t width);

// Copies every parameter and buffer from a checkpoint holding exactly net's state_dict
// (momentum buffers are ignored). stoker::Error naming `source` and the keys otherwise.
void load_parameters(ReferenceNet& r, const Checkpoint& ckpt, std::string_view source);

// One training step without the update: the training-mode forward (running stats and
// num_batches_tracked updated), the mean cross-entropy with label smoothing, then every
// trainable parameter's gradient (the image's gradient is not computed). Returns the loss.
float forward_backward(ReferenceNet& r,
                       const float* images,     // N x 3 x H x W
                       const int32_t* labels,   // N, each in [0, classes)
                       float label_smoothing);  // in [0, 1]

// The eval-mode forward (running statistics, nothing updated). Returns the logits.
std::span<const float> forward_eval(ReferenceNet& r,
                                    const float* images);  // N x 3 x H x W

// N x classes: the logits of the last forward (either mode).
std::span<const float> logits(const ReferenceNet& r);
// A parameter or f32 buffer (e.g. "layer1.0.bn1.running_mean") by state_dict key, and a
// trainable parameter's gradient from the last forward_backward. STOKER_CHECK on an unknown
// key: callers take keys from the Network.
std::span<const float> parameter(const ReferenceNet& r, std::string_view name);
std::span<const float> gradient(const ReferenceNet& r, std::string_view name);

}  // namespace stoker::ref
