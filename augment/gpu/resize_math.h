// SPDX-License-Identifier: Apache-2.0
// Pillow's bilinear (the antialiased triangle filter of augment/resize_antialias.h) one output
// value at a time, in its fixed point, and the sample's place in an NCHW or NHWC tensor: the
// arithmetic the GPU resize kernels run (augment/gpu/cuda/resize_kernels.cu) and that the CPU
// resize runs, written once, so that the GPU's pixels equal resize_antialias's bit for bit
// on the same decoded window (tests/augment/gpu/resize_job_test.cc runs it on the host).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define STOKER_HD __host__ __device__ __forceinline__
#else
#define STOKER_HD inline
#endif

namespace stoker {

// Pillow's fixed point for 8-bit images: 22 fractional bits leave room for 255 * weight sums.
constexpr int kAntialiasPrecision = 32 - 8 - 2;

STOKER_HD uint8_t antialias_clip8(int32_t v) {
  if (v >= (1 << kAntialiasPrecision << 8)) return 255;
  if (v <= 0) return 0;
  return uint8_t(v >> kAntialiasPrecision);
}

// One output value of a pass: `count` source values `step` bytes apart from `p`, weighted.
STOKER_HD uint8_t antialias_tap(const uint8_t* p, int64_t step, const int32_t* weight, int count) {
  int32_t s = 1 << (kAntialiasPrecision - 1);
  for (int i = 0; i < count; ++i) s += int32_t(p[i * step]) * weight[i];
  return antialias_clip8(s);
}

// Element offset of channel c of pixel (y, x) in one sample of h x w, NHWC or NCHW.
STOKER_HD int64_t sample_offset(bool nhwc, int c, int y, int x, int h, int w) {
  return nhwc ? (int64_t(y) * w + x) * 3 + c : (int64_t(c) * h + y) * w + x;
}

}  // namespace stoker
