// SPDX-License-Identifier: Apache-2.0
// Naive convolution: the loops read like the formula, one output (or one gradient element)
// at a time, summed in double so the reference is more exact than the backends it judges.
#include "train/reference/conv.h"

#include "common/error.h"

namespace stoker::ref {
namespace {

void check_shape(const ConvShape& s) {
  STOKER_CHECK(s.n > 0 && s.c > 0 && s.h > 0 && s.w > 0 && s.k > 0);
  STOKER_CHECK(s.kh > 0 && s.kw > 0 && s.stride > 0 && s.pad >= 0);
  STOKER_CHECK_MSG(s.oh() > 0 && s.ow() > 0, "conv output is empty: {}x{} input, {}x{} kernel", s.h,
                   s.w, s.kh, s.kw);
}

}  // namespace

void conv2d_forward(float* out, const float* in, const float* weight, const ConvShape& s) {
  check_shape(s);
  const int64_t oh = s.oh(), ow = s.ow();
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t k = 0; k < s.k; ++k) {
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t x = 0; x < ow; ++x) {
          double acc = 0;
          for (int64_t c = 0; c < s.c; ++c) {
            const float* plane = in + (n * s.c + c) * s.h * s.w;     // H x W
            const float* wk = weight + (k * s.c + c) * s.kh * s.kw;  // KH x KW
            for (int64_t i = 0; i < s.kh; ++i) {
              const int64_t iy = y * s.stride - s.pad + i;
              if (iy < 0 || iy >= s.h) continue;  // zero padding
              for (int64_t j = 0; j < s.kw; ++j) {
                const int64_t ix = x * s.stride - s.pad + j;
                if (ix < 0 || ix >= s.w) continue;
                acc += double(plane[iy * s.w + ix]) * double(wk[i * s.kw + j]);
              }
            }
          }
          out[((n * s.k + k) * oh + y) * ow + x] = float(acc);
        }
      }
    }
  }
}

void conv2d_backward(float* din, float* dweight, const float* dout, const float* in,
                     const float* weight, const ConvShape& s) {
  check_shape(s);
  const int64_t oh = s.oh(), ow = s.ow();

  // dweight[k,c,i,j] = sum over n, y, x of dout[n,k,y,x] * in[n, c, y*stride-pad+i, ...]:
  // the forward's sum with the roles of weight and output swapped.
  for (int64_t k = 0; k < s.k; ++k) {
    for (int64_t c = 0; c < s.c; ++c) {
      for (int64_t i = 0; i < s.kh; ++i) {
        for (int64_t j = 0; j < s.kw; ++j) {
          double acc = 0;
          for (int64_t n = 0; n < s.n; ++n) {
            const float* plane = in + (n * s.c + c) * s.h * s.w;  // H x W
            const float* g = dout + (n * s.k + k) * oh * ow;      // OH x OW
            for (int64_t y = 0; y < oh; ++y) {
              const int64_t iy = y * s.stride - s.pad + i;
              if (iy < 0 || iy >= s.h) continue;
              for (int64_t x = 0; x < ow; ++x) {
                const int64_t ix = x * s.stride - s.pad + j;
                if (ix < 0 || ix >= s.w) continue;
                acc += double(g[y * ow + x]) * double(plane[iy * s.w + ix]);
              }
            }
          }
          dweight[((k * s.c + c) * s.kh + i) * s.kw + j] = float(acc);
        }
      }
    }
  }

  if (din == nullptr) return;
  // din[n,c,iy,ix] gathers every output whose window covered (iy, ix): output row y uses
  // input row iy through kernel row i = iy + pad - y*stride, which must be a whole tap.
  // Gathering (not scattering) lets each element be summed in double and written once.
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t c = 0; c < s.c; ++c) {
      for (int64_t iy = 0; iy < s.h; ++iy) {
        for (int64_t ix = 0; ix < s.w; ++ix) {
          double acc = 0;
          for (int64_t k = 0; k < s.k; ++k) {
            const float* g = dout + (n * s.k + k) * oh * ow;         // OH x OW
            const float* wk = weight + (k * s.c + c) * s.kh * s.kw;  // KH x KW
            for (int64_t i = 0; i < s.kh; ++i) {
              const int64_t ty = iy + s.pad - i;  // = y * stride
              if (ty < 0 || ty % s.stride != 0 || ty / s.stride >= oh) continue;
              for (int64_t j = 0; j < s.kw; ++j) {
                const int64_t tx = ix + s.pad - j;
                if (tx < 0 || tx % s.stride != 0 || tx / s.stride >= ow) continue;
                acc += double(g[(ty / s.stride) * ow + tx / s.stride]) * double(wk[i * s.kw + j]);
              }
            }
          }
          din[((n * s.c + c) * s.h + iy) * s.w + ix] = float(acc);
        }
      }
    }
  }
}

}  // namespace stoker::ref
