// SPDX-License-Identifier: Apache-2.0
// Crop planning: invariants over thousands of random image shapes, torchvision's rules on
// known cases, and determinism (a crop is a pure function of seed, epoch and sample).
#include <gtest/gtest.h>

#include <cmath>

#include "augment/crop.h"
#include "common/rng.h"

namespace stoker {
namespace {

TEST(RandomResizedCrop, InvariantsOverThousandsOfShapes) {
  Rng shapes(1, 2, 3);
  int fallbacks = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const int W = static_cast<int>(shapes.range(1, 4000));
    const int H = static_cast<int>(shapes.range(1, 4000));
    Rng rng(7, 0, static_cast<uint64_t>(trial));
    const Rect r = random_resized_crop_rect(W, H, 0.08, 1.0, 3.0 / 4, 4.0 / 3, rng);
    ASSERT_GT(r.w, 0);
    ASSERT_GT(r.h, 0);
    ASSERT_GE(r.x, 0);
    ASSERT_GE(r.y, 0);
    ASSERT_LE(r.x + r.w, W) << W << "x" << H;
    ASSERT_LE(r.y + r.h, H) << W << "x" << H;
    const double area = static_cast<double>(r.w) * r.h / (static_cast<double>(W) * H);
    const double ratio = static_cast<double>(r.w) / r.h;
    // Sizes are rounded to whole pixels: allow that much slack on area and aspect.
    const double slack_area = (r.w + r.h + 1.0) / (static_cast<double>(W) * H);
    const double slack_ratio = ratio * (1.0 / r.w + 1.0 / r.h);
    const bool sampled = area >= 0.08 - slack_area && area <= 1.0 + slack_area &&
                         ratio >= 0.75 - slack_ratio && ratio <= 4.0 / 3 + slack_ratio;
    const bool centred = r.x == (W - r.w) / 2 && r.y == (H - r.h) / 2;
    if (!sampled) {
      // The fallback: the whole image, or its centre cut to the nearest allowed aspect.
      ASSERT_TRUE(centred) << W << "x" << H;
      ASSERT_TRUE(r.w == W || r.h == H) << W << "x" << H;
      ++fallbacks;
    }
  }
  // Extreme aspect ratios (1 x 4000 ...) fall back; ordinary ones almost never do.
  EXPECT_LT(fallbacks, 20000 / 4);
}

TEST(RandomResizedCrop, FallbackMatchesTorchvision) {
  // torchvision: 10 failed tries on a 1000x10 image (ratio 100 > 4/3): h = H, w = round(h * 4/3)
  // A scale range that can never fit forces the fallback deterministically.
  Rng rng(0, 0, 0);
  const Rect wide = random_resized_crop_rect(1000, 10, 2.0, 3.0, 3.0 / 4, 4.0 / 3, rng);
  EXPECT_EQ(wide.h, 10);
  EXPECT_EQ(wide.w, 13);
  EXPECT_EQ(wide.x, (1000 - 13) / 2);
  const Rect tall = random_resized_crop_rect(10, 1000, 2.0, 3.0, 3.0 / 4, 4.0 / 3, rng);
  EXPECT_EQ(tall.w, 10);
  EXPECT_EQ(tall.h, 13);  // round(10 / 0.75) = 13
  const Rect square = random_resized_crop_rect(100, 100, 2.0, 3.0, 3.0 / 4, 4.0 / 3, rng);
  EXPECT_EQ(square.w, 100);
  EXPECT_EQ(square.h, 100);
}

TEST(RandomResizedCrop, AreaAndAspectAreDistributedAsSampled) {
  // Mean of U(0.08, 1) is 0.54; log-uniform aspect has median 1. Large square image: no clipping
  // bias for small areas, some rejection for large ones pulls the mean down a little.
  double sum_area = 0, above = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    Rng rng(3, 1, static_cast<uint64_t>(i));
    const Rect r = random_resized_crop_rect(2000, 2000, 0.08, 1.0, 3.0 / 4, 4.0 / 3, rng);
    sum_area += static_cast<double>(r.w) * r.h / 4e6;
    above += r.w > r.h;
  }
  EXPECT_NEAR(sum_area / n, 0.50, 0.04);
  EXPECT_NEAR(above / n, 0.5, 0.03);
}

TEST(PlanCrop, SameKeySameCropDifferentKeyDifferentCrop) {
  TransformConfig cfg;
  int differ = 0;
  for (uint64_t i = 0; i < 100; ++i) {
    Rng a(5, 2, i), b(5, 2, i), c(5, 3, i);
    const CropPlan pa = plan_crop(cfg, 640, 480, a), pb = plan_crop(cfg, 640, 480, b);
    const CropPlan pc = plan_crop(cfg, 640, 480, c);
    EXPECT_EQ(pa.region.x, pb.region.x);
    EXPECT_EQ(pa.region.w, pb.region.w);
    EXPECT_EQ(pa.flip, pb.flip);
    differ += pa.region.x != pc.region.x || pa.region.w != pc.region.w;
  }
  EXPECT_GT(differ, 90);
}

TEST(PlanCrop, RandomCropIsAFixedWindowOrUpscaledShortSide) {
  TransformConfig cfg;
  cfg.kind = TransformKind::random_crop;
  cfg.size = 224;
  Rng shapes(4, 4, 4);
  for (int trial = 0; trial < 5000; ++trial) {
    const int W = static_cast<int>(shapes.range(16, 3000)),
              H = static_cast<int>(shapes.range(16, 3000));
    Rng rng(1, 0, static_cast<uint64_t>(trial));
    const CropPlan p = plan_crop(cfg, W, H, rng);
    ASSERT_EQ(p.out_w, 224);
    ASSERT_LE(p.region.x + p.region.w, W);
    ASSERT_LE(p.region.y + p.region.h, H);
    if (std::min(W, H) >= 224) {
      ASSERT_EQ(p.region.w, 224);  // pixels taken 1:1: no resampling
      ASSERT_EQ(p.region.h, 224);
    } else {
      // The short side is resized up to 224, so the crop spans the whole short side.
      if (W <= H) {
        ASSERT_EQ(p.region.w, W);
      }
      if (H <= W) {
        ASSERT_EQ(p.region.h, H);
      }
    }
  }
}

// --size HxW: every transform plans an out_w x out_h output (width from `size`, height from
// `height`); a random-crop window is W x H source pixels where it fits, and a centre crop of
// a square image resized to the larger side is centred on the short axis.
TEST(PlanCrop, NonSquareOutputs) {
  TransformConfig cfg;
  cfg.size = 96;
  cfg.height = 40;
  EXPECT_EQ(cfg.out_width(), 96);
  EXPECT_EQ(cfg.out_height(), 40);
  for (const TransformKind kind : {TransformKind::random_resized_crop, TransformKind::random_crop,
                                   TransformKind::center_crop}) {
    cfg.kind = kind;
    Rng rng(3, 0, 1);
    const CropPlan p = plan_crop(cfg, 500, 300, rng);
    EXPECT_EQ(p.out_w, 96) << transform_name(kind);
    EXPECT_EQ(p.out_h, 40) << transform_name(kind);
    if (kind == TransformKind::random_crop) {
      EXPECT_EQ(p.region.w, 96);
      EXPECT_EQ(p.region.h, 40);
    }
  }
  cfg.kind = TransformKind::center_crop;
  cfg.resize = 109;  // 96 * 256 / 224
  Rng rng(0);
  const CropPlan c = plan_crop(cfg, 218, 218, rng);  // resized to 109 x 109: a 2:1 map
  EXPECT_EQ(c.region.x, 2 * 6);                      // round((109 - 96) / 2) = 6
  EXPECT_EQ(c.region.y, 2 * 34);                     // round((109 - 40) / 2) = 34 (34.5, even)
  EXPECT_EQ(c.region.w, 2 * 96);
  EXPECT_EQ(c.region.h, 2 * 40);
  // A random-crop window larger than the image: resized up, short side to the larger side.
  cfg.kind = TransformKind::random_crop;
  const CropPlan u = plan_crop(cfg, 50, 80, rng);
  EXPECT_EQ(u.region.w, 50);
  EXPECT_LE(u.region.y + u.region.h, 80);
}

// The windows torchvision's Resize(256) + CenterCrop(224) takes, computed by torchvision
// 0.14 itself (F._compute_resized_output_size, then F.center_crop on an image of its own
// pixel coordinates), as source-pixel intervals [x0, x1) x [y0, y1). Stoker's window must
// start within a pixel of them (it is floored to whole pixels) and end within 1.5 (floored
// start plus rounded width). 341 and 343 px wide resized images put the centre crop's
// left edge at 58.5 and 59.5: Python rounds both to even (58, 60), not up.
// tests/augment/pipeline_vs_torchvision.py checks hundreds more shapes against torchvision.
TEST(PlanCrop, CenterCropMatchesTorchvisionResize256CenterCrop224) {
  struct Known {
    int width, height;
    double x0, y0, x1, y1;  // torchvision's window in source pixels
  };
  const Known known[] = {
      {500, 375, 85.04398826979472, 23.4375, 413.48973607038124, 351.5625},
      {343, 256, 60.0, 16.0, 284.0, 240.0},
      {341, 256, 58.0, 16.0, 282.0, 240.0},
      {512, 512, 32.0, 32.0, 480.0, 480.0},
      {1024, 683, 213.89033942558746, 42.6875, 812.7832898172323, 640.3125},
  };
  TransformConfig cfg;
  cfg.kind = TransformKind::center_crop;
  cfg.flip = 0;
  for (const Known& k : known) {
    Rng rng(0, 0, 0);
    const CropPlan p = plan_crop(cfg, k.width, k.height, rng);
    EXPECT_EQ(p.out_w, 224);
    EXPECT_FALSE(p.flip);
    EXPECT_LT(std::abs(p.region.x - k.x0), 1.0) << k.width << "x" << k.height;
    EXPECT_LT(std::abs(p.region.y - k.y0), 1.0) << k.width << "x" << k.height;
    EXPECT_LE(std::abs(p.region.x + p.region.w - k.x1), 1.5) << k.width << "x" << k.height;
    EXPECT_LE(std::abs(p.region.y + p.region.h - k.y1), 1.5) << k.width << "x" << k.height;
  }
  // Where the resize is the identity the window is exact: whole pixels, nothing to round.
  Rng rng(0, 0, 0);
  const CropPlan exact = plan_crop(cfg, 343, 256, rng);
  EXPECT_EQ(exact.region.x, 60);
  EXPECT_EQ(exact.region.y, 16);
  EXPECT_EQ(exact.region.w, 224);
  EXPECT_EQ(exact.region.h, 224);
}

TEST(PlanCrop, FlipProbability) {
  TransformConfig cfg;
  int flips = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    Rng rng(8, 0, i);
    flips += plan_crop(cfg, 300, 300, rng).flip;
  }
  EXPECT_NEAR(flips / 10000.0, 0.5, 0.03);
  cfg.flip = 0;
  Rng rng(8, 0, 1);
  EXPECT_FALSE(plan_crop(cfg, 300, 300, rng).flip);
}

}  // namespace
}  // namespace stoker
