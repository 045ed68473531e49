// SPDX-License-Identifier: Apache-2.0
#include "augment/resize.h"

#include <opencv2/imgproc.hpp>

namespace stoker {

void resize_region(const cv::Mat& src, int out_w, int out_h, cv::Mat& dst) {
  if (src.cols == out_w && src.rows == out_h) {
    src.copyTo(dst);
    return;
  }
  const bool big_reduction = src.cols >= 2 * out_w || src.rows >= 2 * out_h;
  cv::resize(src, dst, cv::Size(out_w, out_h), 0, 0,
             big_reduction ? cv::INTER_AREA : cv::INTER_LINEAR);
}

}  // namespace stoker
