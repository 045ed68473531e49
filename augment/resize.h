// SPDX-License-Identifier: Apache-2.0
// Resizes a decoded region to the output size, with one of two filters. `fast` (OpenCV): the
// decoder's DCT scaling has already done most of any large reduction, so bilinear is usually
// enough; area averaging is used where a reduction of 3x or more is still left. `antialias`:
// Pillow's bilinear with its support widened by the reduction, as torchvision's default
// (PIL) path resizes (augment/resize_antialias.h).
#pragma once

#include <opencv2/core.hpp>

#include <string>

namespace stoker {

enum class ResizeFilter : uint8_t { fast, antialias };

// "fast" or "antialias"; throws stoker::Error naming the value otherwise.
ResizeFilter parse_resize_filter(const std::string& name);

// dst: out_h x out_w x 3 uint8. Reuses dst's buffer when it already has that size.
void resize_region(const cv::Mat& src, int out_w, int out_h, cv::Mat& dst,
                   ResizeFilter filter = ResizeFilter::fast);

}  // namespace stoker
