// SPDX-License-Identifier: Apache-2.0
// Pillow's bilinear resize (Image.resize with BILINEAR, which torchvision's default PIL path
// runs): a separable triangle filter whose support grows with the reduction factor, so a
// shrink averages every source pixel instead of sampling two. Same coefficients, fixed-point
// precision, rounding and pass order (horizontal, then vertical) as Pillow's Resample.c, so
// pixels match Pillow's on the same input. Not OpenCV's INTER_AREA (a box filter).
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <vector>

namespace stoker {

// Pillow's precompute_coeffs + normalize_coeffs_8bpc for the triangle filter over the whole
// input [0, in) to `out` values: per output value its first input, its tap count and ksize
// weights (fixed point, augment/gpu/resize_math.h's kAntialiasPrecision).
struct AntialiasTaps {
  int ksize = 0;
  std::vector<int32_t> first, count;
  std::vector<int32_t> weight;  // [out][ksize]
};
void antialias_taps(int in, int out, AntialiasTaps& t);

// src: HxWx3 uint8 (any row step); dst: out_h x out_w x 3 uint8, its buffer reused when it
// already has that size.
void resize_antialias(const cv::Mat& src, int out_w, int out_h, cv::Mat& dst);

}  // namespace stoker
