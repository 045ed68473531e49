// SPDX-License-Identifier: Apache-2.0
// Stochastic gradient descent exactly as torch.optim.SGD (torch 1.13, single-tensor path):
// weight decay added to the gradient, a momentum buffer that starts as the first gradient,
// optional dampening and Nesterov. Plain buffers; the backend owns the memory.
#pragma once

#include <cstddef>
#include <span>

namespace stoker {

struct SgdConfig {
  float momentum = 0.9f;
  float dampening = 0.0f;
  bool nesterov = false;
  float weight_decay = 1e-4f;
  // ResNet recipes often exempt BN parameters and biases (1-D tensors) from weight decay.
  bool decay_bn_and_bias = true;
};

// One tensor's view for a step. `momentum` has n floats; `has_momentum` says whether it
// holds a buffer yet (false before the first step, as a fresh torch optimiser).
struct SgdParam {
  float* value = nullptr;        // [n]
  const float* grad = nullptr;   // [n]
  float* momentum = nullptr;     // [n] the momentum buffer
  bool* has_momentum = nullptr;  // one flag per tensor
  size_t n = 0;
  bool is_bn_or_bias = false;  // 1-D: exempt from decay unless decay_bn_and_bias
};

// value -= lr * update, with update as torch.optim.SGD computes it.
void sgd_step(const SgdConfig& config, float lr, std::span<const SgdParam> params);

}  // namespace stoker
