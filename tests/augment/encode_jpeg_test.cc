// SPDX-License-Identifier: Apache-2.0
// The JPEG encoder behind `stoker gen` and the null source against the one it replaced:
// OpenCV's cv::imencode(".jpg") must write the very same bytes for every image shape and
// quality gen uses, so datasets made before and after (and by the lean GPU build, which has
// no imgcodecs) are identical files.
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "augment/encode_jpeg.h"
#include "common/error.h"
#include "loader/sources/source.h"
#include "test_util.h"
#include "tools/gen/synth_image.h"

namespace stoker {
namespace {

std::vector<uint8_t> opencv_jpeg(const cv::Mat& rgb, int quality) {
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  std::vector<uint8_t> out;
  EXPECT_TRUE(cv::imencode(".jpg", bgr, out, {cv::IMWRITE_JPEG_QUALITY, quality}));
  return out;
}

TEST(EncodeJpeg, SameBytesAsOpenCvForPhotosAtEveryQuality) {
  // Odd sizes (partial MCUs in both directions), a 1-pixel row, and gen's usual shapes.
  const int sizes[][2] = {{37, 23}, {1, 9}, {16, 16}, {256, 171}, {500, 375}};
  for (const auto& wh : sizes) {
    const cv::Mat rgb = render_photo_like({wh[0], wh[1], 2, 10, 7});
    for (int q : {1, 50, 75, 90, 95, 100}) {
      const auto ours = encode_jpeg_rgb(rgb.data, rgb.cols, rgb.rows, rgb.step, q);
      EXPECT_EQ(ours, opencv_jpeg(rgb, q)) << wh[0] << "x" << wh[1] << " q" << q;
    }
  }
}

TEST(EncodeJpeg, HonoursTheRowStride) {
  const cv::Mat big = render_photo_like({64, 40, 1, 4, 3});
  const cv::Mat roi = big(cv::Rect(5, 3, 33, 21));  // not continuous: step > 3 * cols
  ASSERT_GT(roi.step, roi.cols * 3u);
  EXPECT_EQ(encode_jpeg_rgb(roi.data, roi.cols, roi.rows, roi.step, 90), opencv_jpeg(roi, 90));
}

TEST(EncodeJpeg, NullSourceJpegIsTheGradientOpenCvWrote) {
  // The bytes the null source had when it called cv::imencode on this BGR gradient.
  cv::Mat bgr(256, 256, CV_8UC3);
  for (int y = 0; y < bgr.rows; ++y) {
    for (int x = 0; x < bgr.cols; ++x) {
      bgr.at<cv::Vec3b>(y, x) = {static_cast<uint8_t>(x), static_cast<uint8_t>(y),
                                 static_cast<uint8_t>((x + y) / 2)};
    }
  }
  std::vector<uint8_t> expected;
  ASSERT_TRUE(cv::imencode(".jpg", bgr, expected, {cv::IMWRITE_JPEG_QUALITY, 90}));
  const auto got = null_source_jpeg();
  EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.end()), expected);
}

TEST(EncodeJpeg, BadShapeOrQualityIsAnError) {
  const uint8_t px[3] = {1, 2, 3};
  EXPECT_THROW(encode_jpeg_rgb(px, 0, 1, 3, 90), Error);
  EXPECT_THROW(encode_jpeg_rgb(px, 1, 1, 2, 90), Error);
  EXPECT_THROW(encode_jpeg_rgb(px, 1, 1, 3, 0), Error);
  EXPECT_THROW(encode_jpeg_rgb(px, 1, 1, 3, 101), Error);
}

}  // namespace
}  // namespace stoker
