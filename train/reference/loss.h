// SPDX-License-Identifier: Apache-2.0
// Softmax cross-entropy with label smoothing, averaged over the batch: torch's
// F.cross_entropy(logits, target, label_smoothing=eps). The target distribution is
// (1 - eps) on the label plus eps / K on every class. No class weights, no ignore_index.
#pragma once

#include <cstdint>

namespace stoker::ref {

struct CrossEntropyShape {
  int64_t n = 0;                // batch
  int64_t k = 0;                // classes
  float label_smoothing = 0.f;  // eps in [0, 1]
};

// Returns the mean loss and writes the softmax probabilities, which the backward needs.
float cross_entropy_forward(float* probs,            // N x K
                            const float* logits,     // N x K
                            const int32_t* targets,  // N, each in [0, K)
                            const CrossEntropyShape& s);

// dlogits = (probs - target distribution) / N: the gradient of the mean loss.
void cross_entropy_backward(float* dlogits,          // N x K
                            const float* probs,      // N x K, from the forward
                            const int32_t* targets,  // N
                            const CrossEntropyShape& s);

}  // namespace stoker::ref
