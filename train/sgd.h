// SPDX-License-Identifier: Apache-2.0
// Stochastic gradient descent exactly as torch.optim.SGD (torch 1.13, single-tensor path):
// weight decay added to the gradient, a momentum buffer that starts as the first gradient,
// optional dampening and Nesterov. Plain buffers; the backend owns the memory.
// LARS (You, Gitman, Ginsburg 2017, "Large Batch Training of Convolutional Networks",
// arXiv:1708.03888) is the same step with a layer-wise trust ratio applied before momentum,
// as the common PyTorch implementations (torchlars, MLPerf's ResNet LARS) do.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace stoker {

enum class Optimizer { sgd, lars };
std::string_view optimizer_name(Optimizer o);
// stoker::Error listing the valid names ("sgd", "lars").
Optimizer parse_optimizer(std::string_view name);

struct SgdConfig {
  float momentum = 0.9f;
  float dampening = 0.0f;
  bool nesterov = false;
  float weight_decay = 1e-4f;
  // ResNet recipes often exempt BN parameters and biases (1-D tensors) from weight decay.
  bool decay_bn_and_bias = true;
  // Last, so that positional initialisers of the SGD fields above stay valid.
  Optimizer optimizer = Optimizer::sgd;
  // LARS trust coefficient. Per tensor that is not 1-D (BN parameters and biases keep plain
  // SGD, as the usual large-batch recipes exclude them):
  //   d     = g + wd * w
  //   trust = eta * ||w|| / (||g|| + wd * ||w||)   (1 when ||w|| or ||g|| is 0)
  //   d     = trust * d
  // then momentum and the step exactly as SGD below (buf = d on the first step, else
  // buf = momentum * buf + (1 - dampening) * d; w -= lr * buf). Norms are L2 over the
  // tensor, accumulated in double.
  float lars_eta = 0.001f;
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

// value -= lr * update, with update as torch.optim.SGD computes it (scaled by LARS's trust
// ratio when config.optimizer is lars).
void sgd_step(const SgdConfig& config, float lr, std::span<const SgdParam> params);

}  // namespace stoker
