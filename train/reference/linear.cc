// SPDX-License-Identifier: Apache-2.0
// Fully connected layer: three plain matrix products, each element summed in double.
#include "train/reference/linear.h"

#include "common/error.h"

namespace stoker::ref {

void linear_forward(float* out, const float* in, const float* weight, const float* bias,
                    const LinearShape& s) {
  STOKER_CHECK(s.n > 0 && s.in > 0 && s.out > 0);
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t o = 0; o < s.out; ++o) {
      double acc = bias[o];
      for (int64_t i = 0; i < s.in; ++i) acc += double(in[n * s.in + i]) * weight[o * s.in + i];
      out[n * s.out + o] = float(acc);
    }
  }
}

void linear_backward(float* din, float* dweight, float* dbias, const float* dout, const float* in,
                     const float* weight, const LinearShape& s) {
  STOKER_CHECK(s.n > 0 && s.in > 0 && s.out > 0);
  for (int64_t o = 0; o < s.out; ++o) {
    double db = 0;
    for (int64_t n = 0; n < s.n; ++n) db += dout[n * s.out + o];
    dbias[o] = float(db);
    for (int64_t i = 0; i < s.in; ++i) {
      double acc = 0;
      for (int64_t n = 0; n < s.n; ++n) acc += double(dout[n * s.out + o]) * in[n * s.in + i];
      dweight[o * s.in + i] = float(acc);
    }
  }
  if (din == nullptr) return;
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t i = 0; i < s.in; ++i) {
      double acc = 0;
      for (int64_t o = 0; o < s.out; ++o) acc += double(dout[n * s.out + o]) * weight[o * s.in + i];
      din[n * s.in + i] = float(acc);
    }
  }
}

}  // namespace stoker::ref
