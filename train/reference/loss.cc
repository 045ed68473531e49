// SPDX-License-Identifier: Apache-2.0
// Softmax cross-entropy with label smoothing. Log-softmax by the max-shifted log-sum-exp in
// double, so large logits neither overflow nor lose the small probabilities.
#include "train/reference/loss.h"

#include <cmath>

#include "common/error.h"

namespace stoker::ref {
namespace {

void check_args(const int32_t* targets, const CrossEntropyShape& s) {
  STOKER_CHECK(s.n > 0 && s.k > 0);
  STOKER_CHECK(s.label_smoothing >= 0 && s.label_smoothing <= 1);
  for (int64_t n = 0; n < s.n; ++n) {
    STOKER_CHECK_MSG(targets[n] >= 0 && targets[n] < s.k,
                     "target {} of sample {} is not in [0, {})", targets[n], n, s.k);
  }
}

}  // namespace

float cross_entropy_forward(float* probs, const float* logits, const int32_t* targets,
                            const CrossEntropyShape& s) {
  check_args(targets, s);
  const double eps = s.label_smoothing;
  double total = 0;
  for (int64_t n = 0; n < s.n; ++n) {
    const float* z = logits + n * s.k;  // K
    double zmax = z[0];
    for (int64_t j = 1; j < s.k; ++j) zmax = z[j] > zmax ? z[j] : zmax;
    double sum_exp = 0;
    for (int64_t j = 0; j < s.k; ++j) sum_exp += std::exp(z[j] - zmax);
    const double lse = zmax + std::log(sum_exp);
    // -log p_j = lse - z_j. The smoothed loss is (1 - eps) * (-log p_target) plus
    // eps / K * sum_j (-log p_j), torch's formula.
    double sum_nll = 0;
    for (int64_t j = 0; j < s.k; ++j) {
      sum_nll += lse - z[j];
      probs[n * s.k + j] = float(std::exp(z[j] - lse));
    }
    total += (1 - eps) * (lse - z[targets[n]]) + eps / double(s.k) * sum_nll;
  }
  return float(total / double(s.n));
}

void cross_entropy_backward(float* dlogits, const float* probs, const int32_t* targets,
                            const CrossEntropyShape& s) {
  check_args(targets, s);
  const double eps = s.label_smoothing;
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t j = 0; j < s.k; ++j) {
      const double q = (j == targets[n] ? 1 - eps : 0) + eps / double(s.k);
      dlogits[n * s.k + j] = float((probs[n * s.k + j] - q) / double(s.n));
    }
  }
}

}  // namespace stoker::ref
