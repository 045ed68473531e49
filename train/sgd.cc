// SPDX-License-Identifier: Apache-2.0
#include "train/sgd.h"

#include "common/error.h"

namespace stoker {

void sgd_step(const SgdConfig& c, float lr, std::span<const SgdParam> params) {
  STOKER_CHECK(!c.nesterov || (c.momentum > 0 && c.dampening == 0));  // torch's own rule
  for (const SgdParam& p : params) {
    const float wd = (p.is_bn_or_bias && !c.decay_bn_and_bias) ? 0.0f : c.weight_decay;
    const bool first = !*p.has_momentum;
    for (size_t i = 0; i < p.n; ++i) {
      // Same float32 operations, in the same order, as torch's _single_tensor_sgd.
      float d = p.grad[i];
      if (wd != 0.0f) d = d + wd * p.value[i];
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
