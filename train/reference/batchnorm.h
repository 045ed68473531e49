// SPDX-License-Identifier: Apache-2.0
// Naive 2-D batch normalisation, NCHW, with PyTorch's semantics: training mode normalises
// with the batch's biased variance and moves the running variance toward the UNBIASED one;
// inference mode uses the running statistics. Affine (gamma, beta) always, as ResNet's BNs.
#pragma once

#include <cstdint>

namespace stoker::ref {

struct BatchNormShape {
  int64_t n = 0, c = 0, h = 0, w = 0;  // N x C x H x W, statistics per channel over N, H, W
  float eps = 1e-5f;
  float momentum = 0.1f;  // running = (1 - momentum) * running + momentum * batch
};

// Training mode. Writes out, the batch mean and 1/sqrt(biased var + eps) per channel (saved
// for the backward), and updates the running statistics in place. Needs N*H*W > 1, as torch:
// the unbiased variance of a single value is undefined.
void batchnorm_forward_train(float* out,           // N x C x H x W
                             float* mean,          // C, written
                             float* rstd,          // C, written
                             float* running_mean,  // C, updated
                             float* running_var,   // C, updated
                             const float* in,      // N x C x H x W
                             const float* gamma,   // C
                             const float* beta,    // C
                             const BatchNormShape& s);

// Inference mode: out = gamma * (in - running_mean) / sqrt(running_var + eps) + beta.
void batchnorm_forward_infer(float* out,                 // N x C x H x W
                             const float* in,            // N x C x H x W
                             const float* gamma,         // C
                             const float* beta,          // C
                             const float* running_mean,  // C
                             const float* running_var,   // C
                             const BatchNormShape& s);

// Backward of the training mode (the batch statistics depend on the input, which adds the
// two mean terms). Writes din, dgamma and dbeta; din may alias dout.
void batchnorm_backward(float* din,          // N x C x H x W
                        float* dgamma,       // C
                        float* dbeta,        // C
                        const float* dout,   // N x C x H x W
                        const float* in,     // N x C x H x W
                        const float* gamma,  // C
                        const float* mean,   // C, from batchnorm_forward_train
                        const float* rstd,   // C, from batchnorm_forward_train
                        const BatchNormShape& s);

}  // namespace stoker::ref
