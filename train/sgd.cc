// SPDX-License-Identifier: Apache-2.0
#include "train/sgd.h"

#include <cmath>

#include "common/error.h"

namespace stoker {

std::string_view optimizer_name(Optimizer o) {
  return o == Optimizer::lars ? "lars" : "sgd";
}

Optimizer parse_optimizer(std::string_view name) {
  if (name == "sgd") return Optimizer::sgd;
  if (name == "lars") return Optimizer::lars;
  fail("unknown optimizer '{}': expected sgd or lars", name);
}

namespace {

double l2_norm(const float* x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += double(x[i]) * double(x[i]);
  return std::sqrt(s);
}

// LARS's layer-wise trust ratio (sgd.h), 1 for SGD and for the tensors LARS leaves alone.
float trust_ratio(const SgdConfig& c, const SgdParam& p, float wd) {
  if (c.optimizer != Optimizer::lars || p.is_bn_or_bias) return 1.0f;
  const double w = l2_norm(p.value, p.n), g = l2_norm(p.grad, p.n);
  if (w == 0 || g == 0) return 1.0f;
  return float(double(c.lars_eta) * w / (g + double(wd) * w));
}

}  // namespace

void sgd_step(const SgdConfig& c, float lr, std::span<const SgdParam> params) {
  STOKER_CHECK(!c.nesterov || (c.momentum > 0 && c.dampening == 0));  // torch's own rule
  for (const SgdParam& p : params) {
    const float wd = (p.is_bn_or_bias && !c.decay_bn_and_bias) ? 0.0f : c.weight_decay;
    const bool first = !*p.has_momentum;
    const float trust = trust_ratio(c, p, wd);
    for (size_t i = 0; i < p.n; ++i) {
      // Same float32 operations, in the same order, as torch's _single_tensor_sgd.
      float d = p.grad[i];
      if (wd != 0.0f) d = d + wd * p.value[i];
      if (trust != 1.0f) d = trust * d;
      if (c.momentum != 0.0f) {
        float& buf = p.momentum[i];
        buf = first ? d : buf * c.momentum + (1.0f - c.dampening) * d;
        d = c.nesterov ? d + c.momentum * buf : buf;
      }
      p.value[i] = p.value[i] + (-lr) * d;
    }
    if (c.momentum != 0.0f) *p.has_momentum = true;
  }
}

}  // namespace stoker
