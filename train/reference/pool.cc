// SPDX-License-Identifier: Apache-2.0
// Max and global average pooling, one window at a time.
#include "train/reference/pool.h"

#include <cmath>

#include "common/error.h"

namespace stoker::ref {

void maxpool2d_forward(float* out, int64_t* argmax, const float* in, const PoolShape& s) {
  STOKER_CHECK(s.n > 0 && s.c > 0 && s.h > 0 && s.w > 0);
  STOKER_CHECK(s.k > 0 && s.stride > 0 && s.pad >= 0 && s.pad <= s.k / 2);
  const int64_t oh = s.oh(), ow = s.ow();
  STOKER_CHECK(oh > 0 && ow > 0);
  for (int64_t p = 0; p < s.n * s.c; ++p) {
    const float* x = in + p * s.h * s.w;  // H x W
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t xo = 0; xo < ow; ++xo) {
        int64_t best = -1;
        float best_v = 0;
        for (int64_t i = 0; i < s.k; ++i) {
          const int64_t iy = y * s.stride - s.pad + i;
          if (iy < 0 || iy >= s.h) continue;  // padding never wins
          for (int64_t j = 0; j < s.k; ++j) {
            const int64_t ix = xo * s.stride - s.pad + j;
            if (ix < 0 || ix >= s.w) continue;
            const float v = x[iy * s.w + ix];
            // Strictly greater: the first maximum in scan order keeps a tie. Any NaN
            // replaces the best (so the last NaN wins), exactly torch's comparison.
            if (best < 0 || v > best_v || std::isnan(v)) {
              best = iy * s.w + ix;
              best_v = v;
            }
          }
        }
        STOKER_CHECK(best >= 0);  // pad <= k/2 puts a real element in every window
        out[(p * oh + y) * ow + xo] = best_v;
        argmax[(p * oh + y) * ow + xo] = best;
      }
    }
  }
}

void maxpool2d_backward(float* din, const float* dout, const int64_t* argmax, const PoolShape& s) {
  const int64_t oh = s.oh(), ow = s.ow(), hw = s.h * s.w;
  for (int64_t i = 0; i < s.n * s.c * hw; ++i) din[i] = 0;
  for (int64_t p = 0; p < s.n * s.c; ++p) {
    for (int64_t o = 0; o < oh * ow; ++o) {
      const int64_t a = argmax[p * oh * ow + o];
      STOKER_CHECK(a >= 0 && a < hw);
      din[p * hw + a] += dout[p * oh * ow + o];
    }
  }
}

void global_avgpool_forward(float* out, const float* in, int64_t n, int64_t c, int64_t h,
                            int64_t w) {
  STOKER_CHECK(n > 0 && c > 0 && h > 0 && w > 0);
  const int64_t hw = h * w;
  for (int64_t p = 0; p < n * c; ++p) {
    double sum = 0;
    for (int64_t i = 0; i < hw; ++i) sum += in[p * hw + i];
    out[p] = float(sum / double(hw));
  }
}

void global_avgpool_backward(float* din, const float* dout, int64_t n, int64_t c, int64_t h,
                             int64_t w) {
  STOKER_CHECK(n > 0 && c > 0 && h > 0 && w > 0);
  const int64_t hw = h * w;
  for (int64_t p = 0; p < n * c; ++p) {
    const float g = float(double(dout[p]) / double(hw));
    for (int64_t i = 0; i < hw; ++i) din[p * hw + i] = g;
  }
}

}  // namespace stoker::ref
