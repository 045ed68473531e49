// SPDX-License-Identifier: Apache-2.0
// Per-element and per-step arithmetic shared by the GPU kernels and the host: the SGD
// element update (torch.optim.SGD's float32 operations in torch's order, as train/sgd.cc),
// and the dynamic loss scale's state machine (torch.cuda.amp.GradScaler's defaults). Compiled
// by nvcc for the kernels and by the host compiler for the unit tests, so both run this code.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define STOKER_HD __host__ __device__ __forceinline__
#else
#define STOKER_HD inline
#endif

namespace stoker::gpu {

// Rounded float operations: the device must not contract a*b+c into an FMA where the host
// reference (train/sgd.cc, built without -ffp-contract=fast on x86-64) rounds twice.
STOKER_HD float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
STOKER_HD float add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// ReLU as torch and oneDNN compute it: NaN propagates (fmaxf(x, 0) would return 0 for a NaN,
// CUDA's math functions treating NaN as missing data, and a diverged run would keep a finite
// loss while NaN reached the weights through batch norm's gradients).
STOKER_HD float relu_value(float x) {
  return x > 0.0f || x != x ? x : 0.0f;
}
// Its gradient from the output y, as torch's threshold_backward(dy, y, 0): dy where y is not
// <= 0 (so a NaN output passes the gradient on), else 0.
STOKER_HD float relu_gradient(float y, float dy) {
  return y <= 0.0f ? 0.0f : dy;
}

// The outputs of a pooling window (kernel k, stride s, padding p, `out` outputs along this
// axis) that contain input position i: [*lo, *hi], empty when *lo > *hi. Output o covers
// inputs [o * s - p, o * s - p + k). I: int64_t, or int32_t in a kernel (64-bit division is
// many times slower on a GPU).
template <class I>
STOKER_HD void pool_outputs_containing(I i, I k, I s, I p, I out, I* lo, I* hi) {
  const I a = i + p - k + 1;  // o * s >= a
  I first = a <= 0 ? 0 : (a + s - 1) / s;
  I last = (i + p) / s;  // o * s <= i + p
  if (last > out - 1) last = out - 1;
  if (first < 0) first = 0;
  *lo = first;
  *hi = last;
}

// Whether a grid-stride loop over `total` elements, `stride` threads in the grid, may count in
// int32: every index it forms, the last one past the end included (i + stride for the largest
// i < total), stays at most INT32_MAX. Below 2^31 elements alone is not enough: the index past
// the end would wrap negative and pass `i < total`.
STOKER_HD bool grid_stride_fits_int32(int64_t total, int64_t stride) {
  return total + stride <= (int64_t(1) << 31);
}

// Whether a value read later in a max-pool window's scan replaces the best so far: larger, or
// NaN (torch's CUDA max_pool2d rule: NaN propagates; among equal values the first wins).
STOKER_HD bool pool_takes(float value, float best) {
  return value > best || value != value;
}

// The same gradient from stored window maxima: `offset(orow, ocol)` reads the position of
// output (orow, ocol)'s maximum inside its window, (r - r0) * k + (c - c0) for the window's
// first row r0 and column c0 (pool_window_offset), so the gather compares small integers
// instead of rescanning every window it belongs to. Same windows, same order, same sum.
template <class I, class ReadOffset, class ReadGrad>
STOKER_HD float pool_input_gradient_stored(const ReadOffset& offset, const ReadGrad& dy, I oh, I ow,
                                           I k, I s, I p, I row, I col) {
  I r_lo, r_hi, c_lo, c_hi;
  pool_outputs_containing(row, k, s, p, oh, &r_lo, &r_hi);
  pool_outputs_containing(col, k, s, p, ow, &c_lo, &c_hi);
  float g = 0;
  for (I orow = r_lo; orow <= r_hi; ++orow)
    for (I ocol = c_lo; ocol <= c_hi; ++ocol)
      if (offset(orow, ocol) == (row - (orow * s - p)) * k + (col - (ocol * s - p)))
        g += dy(orow, ocol);
  return g;
}

// The maximum of output (orow, ocol)'s window, scanning rows then columns with pool_takes, as
// its offset in the window ((r - r0) * k + (c - c0), what pool_input_gradient_stored reads),
// -1 for a window wholly in the padding. `x(row, col)` reads the input plane (h x w).
template <class I, class Read>
STOKER_HD I pool_window_offset(const Read& x, I h, I w, I k, I s, I p, I orow, I ocol) {
  const I r0 = orow * s - p, c0 = ocol * s - p;
  float best = 0;
  I arg = -1;
  for (I r = r0 < 0 ? 0 : r0; r < r0 + k && r < h; ++r)
    for (I c = c0 < 0 ? 0 : c0; c < c0 + k && c < w; ++c) {
      const float v = x(r, c);
      if (arg < 0 || pool_takes(v, best)) {
        best = v;
        arg = (r - r0) * k + (c - c0);
      }
    }
  return arg;
}

// The same maximum as an input position (row * w + col), -1 for none.
template <class Read>
STOKER_HD int64_t pool_window_argmax(const Read& x, int64_t h, int64_t w, int64_t k, int64_t s,
                                     int64_t p, int64_t orow, int64_t ocol) {
  const int64_t off = pool_window_offset(x, h, w, k, s, p, orow, ocol);
  if (off < 0) return -1;
  return (orow * s - p + off / k) * w + (ocol * s - p + off % k);
}

// Max pooling's input gradient at (row, col), gathered: the sum of dy(orow, ocol) over the
// windows whose maximum is there, in a fixed order (no atomics, the same bits every run);
// each window rescanned here (the kernel stores the offsets once: pool_window_offset).
// x, dy: readers of the input plane (h x w) and the output gradient plane (oh x ow).
template <class Read, class ReadGrad>
STOKER_HD float pool_input_gradient(const Read& x, const ReadGrad& dy, int64_t h, int64_t w,
                                    int64_t oh, int64_t ow, int64_t k, int64_t s, int64_t p,
                                    int64_t row, int64_t col) {
  const auto offset = [&](int64_t orow, int64_t ocol) {
    return pool_window_offset(x, h, w, k, s, p, orow, ocol);
  };
  return pool_input_gradient_stored(offset, dy, oh, ow, k, s, p, row, col);
}

// Index in cuDNN's NHWC filter layout (K x R x S x C) of plain index i (K x C x R x S, torch's),
// for a filter of c input channels and rs = R * S taps.
STOKER_HD int64_t krsc_index(int64_t i, int64_t c, int64_t rs) {
  const int64_t tap = i % rs, ch = (i / rs) % c, k = i / (rs * c);
  return (k * rs + tap) * c + ch;
}

// For element `i` of a 3-channel image batch stored NHWC (dst_nhwc) or NCHW, with hw pixels
// per image: its channel, and its index in a source stored NHWC (src_nhwc) or NCHW.
STOKER_HD int64_t image_source_index(int64_t i, bool dst_nhwc, bool src_nhwc, int64_t hw,
                                     int* channel) {
  int64_t img, ch, px;
  if (dst_nhwc) {
    ch = i % 3, px = (i / 3) % hw, img = i / (3 * hw);
  } else {
    px = i % hw, ch = (i / hw) % 3, img = i / (3 * hw);
  }
  *channel = int(ch);
  return src_nhwc ? (img * hw + px) * 3 + ch : (img * 3 + ch) * hw + px;
}

// The SGD hyper-parameters a step's kernel reads from device memory (so a captured CUDA
// Graph picks up a new learning rate without being rebuilt).
struct SgdHyper {
  float lr = 0;
  float momentum = 0;
  float dampening = 0;
  float weight_decay = 0;
  int32_t nesterov = 0;
  int32_t decay_bn_and_bias = 1;
};

// One element of torch's _single_tensor_sgd. `first`: the tensor has no momentum buffer yet
// (the buffer becomes the gradient itself). Returns the new value; updates *buf.
STOKER_HD float sgd_element(float value, float grad, float* buf, bool first, float wd,
                            const SgdHyper& h) {
  float d = grad;
  if (wd != 0.0f) d = add_rn(d, mul_rn(wd, value));
  if (h.momentum != 0.0f) {
    const float b = first ? d : add_rn(mul_rn(*buf, h.momentum), mul_rn(1.0f - h.dampening, d));
    *buf = b;
    d = h.nesterov ? add_rn(d, mul_rn(h.momentum, b)) : b;
  }
  return add_rn(value, mul_rn(-h.lr, d));
}

// torch.cuda.amp.GradScaler(init_scale=2**16, growth_factor=2, backoff_factor=0.5,
// growth_interval=2000): an overflowing step is skipped and halves the scale; 2000 clean
// steps in a row double it.
struct LossScale {
  static constexpr float kInit = 65536.0f;
  static constexpr int32_t kGrowthInterval = 2000;
  float scale = kInit;
  int32_t clean_steps = 0;   // torch's growth tracker
  int32_t last_skipped = 0;  // whether the last step was skipped
};

STOKER_HD void loss_scale_after_step(LossScale& s, bool overflow) {
  s.last_skipped = overflow ? 1 : 0;
  if (overflow) {
    s.scale = s.scale * 0.5f;
    s.clean_steps = 0;
    return;
  }
  if (++s.clean_steps == LossScale::kGrowthInterval) {
    s.scale = s.scale * 2.0f;
    s.clean_steps = 0;
  }
}

}  // namespace stoker::gpu
