// SPDX-License-Identifier: Apache-2.0
// Resizes a decoded region to the output size with OpenCV. The decoder's DCT scaling has
// already done most of any large reduction, so bilinear is usually enough; area averaging
// is used where a reduction of 3x or more is still left, to avoid aliasing.
#pragma once

#include <opencv2/core.hpp>

namespace stoker {

// dst: out_h x out_w x 3 uint8. Reuses dst's buffer when it already has that size.
void resize_region(const cv::Mat& src, int out_w, int out_h, cv::Mat& dst);

}  // namespace stoker
