// SPDX-License-Identifier: Apache-2.0
// Collate: layouts, flip, and float values bit-identical to ToTensor + Normalize's float32
// arithmetic ((v / 255 - mean) / std).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "augment/collate.h"
#include "augment/row_kernels.h"
#include "common/error.h"
#include "common/rng.h"

namespace stoker {
namespace {

cv::Mat random_image(int w, int h) {
  cv::Mat m(h, w, CV_8UC3);
  Rng rng(1, 2, 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w * 3; ++x) m.ptr<uint8_t>(y)[x] = static_cast<uint8_t>(rng.below(256));
  return m;
}

TEST(Collate, FloatNchwIsNormalisedLikeTorchvision) {
  OutputSpec spec;
  spec.width = 7;
  spec.height = 5;
  const Normalizer norm(spec);
  const cv::Mat img = random_image(7, 5);
  std::vector<float> out(3 * 5 * 7);
  collate_sample(img, false, norm, out.data());
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 5; ++y)
      for (int x = 0; x < 7; ++x) {
        const float v = static_cast<float>(img.at<cv::Vec3b>(y, x)[c]) / 255.0f;
        const float want = (v - spec.mean[c]) / spec.std[c];
        ASSERT_EQ(out[(c * 5 + y) * 7 + x], want);
      }
}

TEST(Collate, NhwcFlipAndUint8) {
  OutputSpec spec;
  spec.width = 6;
  spec.height = 4;
  spec.dtype = DType::u8;
  spec.layout = Layout::nhwc;
  const Normalizer norm(spec);
  const cv::Mat img = random_image(6, 4);
  std::vector<uint8_t> out(3 * 4 * 6), flipped(3 * 4 * 6);
  collate_sample(img, false, norm, out.data());
  collate_sample(img, true, norm, flipped.data());
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 6; ++x)
      for (int c = 0; c < 3; ++c) {
        ASSERT_EQ(out[(y * 6 + x) * 3 + c], img.at<cv::Vec3b>(y, x)[c]);
        ASSERT_EQ(flipped[(y * 6 + x) * 3 + c], img.at<cv::Vec3b>(y, 5 - x)[c]);
      }
}

TEST(Collate, Uint8NchwPlanes) {
  OutputSpec spec;
  spec.width = 3;
  spec.height = 2;
  spec.dtype = DType::u8;
  const Normalizer norm(spec);
  const cv::Mat img = random_image(3, 2);
  std::vector<uint8_t> out(18);
  collate_sample(img, true, norm, out.data());
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 3; ++x)
        ASSERT_EQ(out[(c * 2 + y) * 3 + x], img.at<cv::Vec3b>(y, 2 - x)[c]);
}

// Every layout, type and flip against a per-pixel reference, at widths that leave vector
// tails (1, 17, 67) and every byte value, with a custom mean and std: the vectorised row
// kernels must give exactly the table's float32 values.
TEST(Collate, VectorisedRowsMatchThePerPixelDefinition) {
  for (const int w : {1, 17, 67, 256}) {
    for (const DType dtype : {DType::f32, DType::u8}) {
      for (const Layout layout : {Layout::nchw, Layout::nhwc}) {
        for (const bool flip : {false, true}) {
          OutputSpec spec;
          spec.width = w;
          spec.height = 3;
          spec.dtype = dtype;
          spec.layout = layout;
          spec.mean = {0.5f, 0.25f, 0.125f};
          spec.std = {0.3f, 0.2f, 0.1f};
          const Normalizer norm(spec);
          const cv::Mat img = random_image(w, 3);
          std::vector<uint8_t> out(spec.sample_bytes());
          collate_sample(img, flip, norm, out.data());
          for (int c = 0; c < 3; ++c)
            for (int y = 0; y < 3; ++y)
              for (int x = 0; x < w; ++x) {
                const uint8_t v = img.at<cv::Vec3b>(y, flip ? w - 1 - x : x)[c];
                const size_t at = layout == Layout::nchw ? (static_cast<size_t>(c) * 3 + y) * w + x
                                                         : (static_cast<size_t>(y) * w + x) * 3 + c;
                if (dtype == DType::u8) {
                  ASSERT_EQ(out[at], v) << w << " " << flip;
                } else {
                  float got;
                  std::memcpy(&got, out.data() + 4 * at, 4);
                  ASSERT_EQ(got, norm.lut[c][v]) << w << " " << layout_name(layout) << " " << flip;
                }
              }
        }
      }
    }
  }
  OutputSpec spec;
  EXPECT_EQ(Normalizer(spec).lut[1][200], (200.0f / 255.0f - 0.456f) / 0.224f);
}

// The row kernels' fused multiply-add form must give the division's bits for all 256 values
// of every channel, or not be used: over ImageNet's constants and 300 random ones.
TEST(Collate, TheMultiplyAddFormGivesTheDivisionsBitsOrIsNotUsed) {
  Rng rng(11, 0, 0);
  uint8_t values[256];
  for (int v = 0; v < 256; ++v) values[v] = static_cast<uint8_t>(v);
  int used = 0;
  for (int i = 0; i < 301; ++i) {
    OutputSpec spec;  // i == 0: torchvision's ImageNet mean and std
    if (i > 0)
      for (int c = 0; c < 3; ++c) {
        spec.mean[c] = static_cast<float>(rng.uniform());
        spec.std[c] = static_cast<float>(0.01 + 2 * rng.uniform());
      }
    const Normalizer norm(spec);
    float planes[3][256], interleaved[3 * 256];
    uint8_t rgb[3 * 256];
    for (int c = 0; c < 3; ++c) {
      normalise_plane_f32(values, 256, norm.affine[c], planes[c]);
      for (int v = 0; v < 256; ++v) rgb[3 * v + c] = static_cast<uint8_t>((v + 85 * c) % 256);
      used += norm.affine[c].fma;
    }
    normalise_interleaved_f32(rgb, 256, norm.affine.data(), interleaved);
    for (int c = 0; c < 3; ++c)
      for (int v = 0; v < 256; ++v) {
        const float want = normalise_divide(static_cast<uint8_t>(v), spec.mean[c], spec.std[c]);
        ASSERT_EQ(std::memcmp(&planes[c][v], &want, 4), 0)
            << "set " << i << " c " << c << " v " << v;
        const uint8_t u = rgb[3 * v + c];
        const float want_i = normalise_divide(u, spec.mean[c], spec.std[c]);
        ASSERT_EQ(std::memcmp(&interleaved[3 * v + c], &want_i, 4), 0) << "set " << i;
      }
    if (i == 0 && __builtin_cpu_supports("fma")) {
      // The fast form is what the default output runs on a CPU with FMA.
      for (int c = 0; c < 3; ++c) EXPECT_TRUE(norm.affine[c].fma) << "channel " << c;
    }
  }
  RecordProperty("channels_on_the_fma_form", used);
}

TEST(Collate, ParsersNameTheValidChoices) {
  EXPECT_EQ(parse_dtype("u8"), DType::u8);
  EXPECT_EQ(parse_layout("nhwc"), Layout::nhwc);
  // The loader's words are the shared names (common/dtype.h); it writes u8 or f32 only.
  for (DType t : {DType::u8, DType::f32}) EXPECT_EQ(parse_dtype(dtype_name(t)), t);
  for (Layout l : {Layout::nchw, Layout::nhwc}) EXPECT_EQ(parse_layout(layout_name(l)), l);
  EXPECT_THROW(parse_dtype("f16"), Error);
  try {
    parse_layout("chw");
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("nchw or nhwc"), std::string::npos);
  }
}

}  // namespace
}  // namespace stoker
