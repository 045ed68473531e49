// SPDX-License-Identifier: Apache-2.0
// The fused resize + collate against the two steps it replaces (cv::resize INTER_LINEAR
// through resize_region, then collate_sample): the same bytes, over thousands of random
// source and output sizes, flips, layouts and types, strided views, and the edge cases
// (same size, exact 2x, enlargement, a source one row high).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "augment/resize_collate.h"
#include "common/rng.h"

namespace stoker {
namespace {

cv::Mat random_image(int w, int h, Rng& rng) {
  cv::Mat m(h, w, CV_8UC3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w * 3; ++x) m.ptr<uint8_t>(y)[x] = static_cast<uint8_t>(rng.below(256));
  return m;
}

// Empty when the two paths agree; else where the first difference is.
std::string compare(const cv::Mat& src, int out_w, int out_h, bool flip, DType dtype, Layout layout,
                    ResizeCollateScratch& scratch) {
  OutputSpec spec;
  spec.dtype = dtype;
  spec.layout = layout;
  spec.width = out_w;
  spec.height = out_h;
  const Normalizer norm(spec);
  const size_t bytes = spec.sample_bytes();
  cv::Mat resized;
  resize_region(src, out_w, out_h, resized, ResizeFilter::fast);
  std::vector<uint8_t> want(bytes), got(bytes + 64, 0xA5);
  collate_sample(resized, flip, norm, want.data());
  resize_collate(src, out_w, out_h, flip, norm, got.data(), scratch);
  for (size_t i = bytes; i < got.size(); ++i)
    if (got[i] != 0xA5) return fmt::format("wrote past the sample at byte {}", i);
  if (std::memcmp(want.data(), got.data(), bytes) == 0) return "";
  size_t i = 0;
  while (want[i] == got[i]) ++i;
  return fmt::format("{}x{} -> {}x{} flip {} {} {}: first difference at byte {} of {}", src.cols,
                     src.rows, out_w, out_h, flip, dtype_name(dtype), layout_name(layout), i,
                     bytes);
}

// The random shapes through one horizontal kernel.
void random_shapes(uint64_t seed) {
  Rng rng(seed, 0, 0);
  ResizeCollateScratch scratch;  // reused across shapes, as a worker does
  const cv::Mat big = random_image(700, 700, rng);
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    const int out_w = 1 + int(rng.below(i % 10 == 0 ? 300 : 64));
    const int out_h = 1 + int(rng.below(i % 10 == 0 ? 300 : 64));
    // Sources from 1/3 of the output (enlargement) up to just under 3x (bilinear's range).
    const int src_w = std::min(700, std::max(2, int(out_w * (0.3 + 2.69 * rng.uniform()))));
    const int src_h = std::min(700, std::max(1, int(out_h * (0.3 + 2.69 * rng.uniform()))));
    if (!fused_resize_applies(src_w, src_h, out_w, out_h, ResizeFilter::fast)) continue;
    // A view into a larger image: rows have a stride, as the decoder's regions do.
    const int x0 = int(rng.below(uint64_t(700 - src_w + 1)));
    const int y0 = int(rng.below(uint64_t(700 - src_h + 1)));
    // Every third source in a buffer of its exact size, the last row ending it: a SIMD load
    // that passed a row's end would read past the buffer there (as AddressSanitizer shows;
    // cv::Mat's own allocations are padded).
    const cv::Mat view = big(cv::Rect(x0, y0, src_w, src_h));
    std::vector<uint8_t> exact(size_t(3) * src_w * src_h);
    cv::Mat src = view;
    if (i % 3 == 0) {
      src = cv::Mat(src_h, src_w, CV_8UC3, exact.data());
      view.copyTo(src);
    }
    const bool flip = rng.below(2) == 1;
    const DType dtype = rng.below(2) ? DType::f32 : DType::u8;
    const Layout layout = rng.below(2) ? Layout::nchw : Layout::nhwc;
    ASSERT_EQ(compare(src, out_w, out_h, flip, dtype, layout, scratch), "");
    ++checked;
  }
  EXPECT_GT(checked, 2500);
}

// Every horizontal kernel this CPU can run (AVX2, SSSE3, plain), whichever the best is here.
TEST(ResizeCollate, MatchesCvResizeThenCollateOverRandomShapes) {
  int kernels = 0;
  for (const ResizeKernel k : {ResizeKernel::avx2, ResizeKernel::ssse3, ResizeKernel::plain}) {
    if (!set_resize_kernel(k)) continue;  // above this CPU
    SCOPED_TRACE(fmt::format("kernel {}", static_cast<int>(k)));
    random_shapes(7 + static_cast<uint64_t>(k));
    ++kernels;
    if (HasFatalFailure()) break;
  }
  set_resize_kernel(ResizeKernel::best);
  EXPECT_GE(kernels, 1);
  RecordProperty("kernels", kernels);
}

TEST(ResizeCollate, MatchesAtTheLoadersShapesAndEdgeCases) {
  Rng rng(8, 0, 0);
  ResizeCollateScratch scratch;
  const struct {
    int src_w, src_h, out_w, out_h;
  } cases[] = {
      {224, 224, 224, 224},  // same size: a copy
      {448, 448, 224, 224},  // exactly 2x: OpenCV switches to area averaging, the same values
      {448, 300, 224, 224}, {300, 448, 224, 224}, {256, 341, 224, 224},
      {600, 500, 224, 224}, {64, 50, 224, 224},  // enlargement
      {2, 1, 5, 3},                              // the smallest source the fused path takes
      {669, 669, 224, 224},                      // just under 3x
      {400, 375, 160, 128},                      // not square
  };
  for (const auto& c : cases) {
    const cv::Mat src = random_image(c.src_w, c.src_h, rng);
    ASSERT_TRUE(fused_resize_applies(c.src_w, c.src_h, c.out_w, c.out_h, ResizeFilter::fast));
    for (int flip = 0; flip < 2; ++flip)
      for (DType d : {DType::u8, DType::f32})
        for (Layout l : {Layout::nchw, Layout::nhwc})
          ASSERT_EQ(compare(src, c.out_w, c.out_h, flip == 1, d, l, scratch), "");
  }
}

TEST(ResizeCollate, LeavesAreaAveragingAndTheAntialiasFilterToTheTwoSteps) {
  EXPECT_FALSE(fused_resize_applies(672, 300, 224, 224, ResizeFilter::fast));  // 3x: area
  EXPECT_FALSE(fused_resize_applies(300, 672, 224, 224, ResizeFilter::fast));
  EXPECT_FALSE(fused_resize_applies(300, 300, 224, 224, ResizeFilter::antialias));
  EXPECT_FALSE(fused_resize_applies(1, 300, 224, 224, ResizeFilter::fast));
  EXPECT_TRUE(fused_resize_applies(671, 671, 224, 224, ResizeFilter::fast));
}

}  // namespace
}  // namespace stoker
