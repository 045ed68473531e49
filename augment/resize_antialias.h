// SPDX-License-Identifier: Apache-2.0
// Pillow's bilinear resize (Image.resize with BILINEAR, which torchvision's default PIL path
// runs): a separable triangle filter whose support grows with the reduction factor, so a
// shrink averages every source pixel instead of sampling two. Same coefficients, fixed-point
// precision, rounding and pass order (horizontal, then vertical) as Pillow's Resample.c, so
// pixels match Pillow's on the same input. Not OpenCV's INTER_AREA (a box filter).
#pragma once

#include <opencv2/core.hpp>

namespace stoker {

// src: HxWx3 uint8 (any row step); dst: out_h x out_w x 3 uint8, its buffer reused when it
// already has that size.
void resize_antialias(const cv::Mat& src, int out_w, int out_h, cv::Mat& dst);

}  // namespace stoker
