// SPDX-License-Identifier: Apache-2.0
// ReLU and residual add, element by element.
#include "train/reference/activation.h"

#include "common/error.h"

namespace stoker::ref {

void relu_forward(float* out, const float* in, int64_t n) {
  STOKER_CHECK(n >= 0);
  // Written `in < 0 ? 0 : in` so a NaN input stays NaN, as in torch: a diverged run should
  // show its NaNs, not hide them behind zeros.
  for (int64_t i = 0; i < n; ++i) out[i] = in[i] < 0 ? 0.0f : in[i];
}

void relu_backward(float* din, const float* dout, const float* out, int64_t n) {
  STOKER_CHECK(n >= 0);
  for (int64_t i = 0; i < n; ++i) din[i] = out[i] > 0 ? dout[i] : 0.0f;
}

void add_forward(float* out, const float* a, const float* b, int64_t n) {
  STOKER_CHECK(n >= 0);
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void add_backward(float* da, float* db, const float* dout, int64_t n) {
  STOKER_CHECK(n >= 0);
  for (int64_t i = 0; i < n; ++i) {
    const float g = dout[i];  // read first: da or db may be dout
    da[i] = g;
    db[i] = g;
  }
}

}  // namespace stoker::ref
