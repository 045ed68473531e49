// SPDX-License-Identifier: Apache-2.0
// The arithmetic the GPU's optimiser kernels run (train/gpu/step_math.h), on the host: the
// SGD element update against train/sgd.cc (itself checked against torch) bit for bit over
// several steps and every option, and the loss scale's state machine against
// torch.cuda.amp.GradScaler's documented defaults.
#include "train/gpu/step_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "common/rng.h"
#include "models/normal.h"
#include "train/sgd.h"

namespace stoker::gpu {
namespace {

struct Options {
  SgdConfig sgd;
  bool exempt;
};

class SgdElement : public ::testing::TestWithParam<Options> {};

TEST_P(SgdElement, MatchesSgdStepBitForBit) {
  const Options o = GetParam();
  constexpr size_t n = 257;
  Rng rng(17);
  std::vector<float> ref_v(n), ref_m(n, 0), v, m(n, 0), g(n);
  fill_normal(rng, 1.0, ref_v);
  v = ref_v;
  bool ref_has = false;
  int32_t has = 0;
  const SgdHyper h{0,
                   o.sgd.momentum,
                   o.sgd.dampening,
                   o.sgd.weight_decay,
                   o.sgd.nesterov ? 1 : 0,
                   o.sgd.decay_bn_and_bias ? 1 : 0};
  for (int step = 0; step < 4; ++step) {
    fill_normal(rng, 0.1, g);
    const float lr = 0.1f / float(step + 1);
    const SgdParam p{ref_v.data(), g.data(), ref_m.data(), &ref_has, n, o.exempt};
    sgd_step(o.sgd, lr, std::span(&p, 1));
    SgdHyper hs = h;
    hs.lr = lr;
    // As the kernel: decay chosen per tensor, the buffer's first step, the flag set after.
    const float wd = (o.exempt && !hs.decay_bn_and_bias) ? 0.0f : hs.weight_decay;
    for (size_t i = 0; i < n; ++i) v[i] = sgd_element(v[i], g[i], &m[i], !has, wd, hs);
    if (hs.momentum != 0.0f) has = 1;
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(v[i], ref_v[i]) << "step " << step << " element " << i;
      ASSERT_EQ(m[i], ref_m[i]) << "step " << step << " element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Options, SgdElement,
                         ::testing::Values(Options{{0.9f, 0.0f, false, 1e-4f, true}, false},
                                           Options{{0.9f, 0.0f, true, 5e-4f, false}, true},
                                           Options{{0.9f, 0.0f, true, 5e-4f, false}, false},
                                           Options{{0.8f, 0.3f, false, 1e-3f, true}, true},
                                           Options{{0.0f, 0.0f, false, 1e-4f, true}, false},
                                           Options{{0.9f, 0.0f, false, 0.0f, true}, false}));

TEST(LossScale, StartsAt2To16HalvesOnOverflowDoublesAfter2000CleanSteps) {
  LossScale s;
  EXPECT_EQ(s.scale, 65536.0f);
  loss_scale_after_step(s, true);
  EXPECT_EQ(s.scale, 32768.0f);
  EXPECT_EQ(s.last_skipped, 1);
  for (int i = 0; i < 1999; ++i) loss_scale_after_step(s, false);
  EXPECT_EQ(s.scale, 32768.0f);
  EXPECT_EQ(s.last_skipped, 0);
  loss_scale_after_step(s, false);
  EXPECT_EQ(s.scale, 65536.0f);
  EXPECT_EQ(s.clean_steps, 0);
  // An overflow resets the count of clean steps.
  for (int i = 0; i < 1500; ++i) loss_scale_after_step(s, false);
  loss_scale_after_step(s, true);
  for (int i = 0; i < 1999; ++i) loss_scale_after_step(s, false);
  EXPECT_EQ(s.scale, 32768.0f);
  loss_scale_after_step(s, false);
  EXPECT_EQ(s.scale, 65536.0f);
}

// torch.relu and its backward (threshold_backward(dy, y, 0)) on [nan, -1, 0, 2], printed by
// Debian's torch: y = [nan, 0, 0, 2], dx = [1, 0, 0, 1] for dy = 1. fmaxf(x, 0) would give 0
// for the NaN, and a diverged run would keep a finite loss.
TEST(Relu, NanPropagatesForwardAndItsGradientPasses) {
  const float nan = std::nanf("");
  EXPECT_TRUE(std::isnan(relu_value(nan)));
  EXPECT_EQ(relu_value(-1.0f), 0.0f);
  EXPECT_EQ(relu_value(0.0f), 0.0f);
  EXPECT_EQ(relu_value(2.0f), 2.0f);
  EXPECT_EQ(relu_value(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(relu_gradient(nan, 1.0f), 1.0f);
  EXPECT_EQ(relu_gradient(0.0f, 1.0f), 0.0f);
  EXPECT_EQ(relu_gradient(2.0f, 1.0f), 1.0f);
  EXPECT_TRUE(std::isnan(relu_gradient(2.0f, nan)));  // a NaN gradient passes on too
}

// Max pooling's backward as the kernel gathers it (pool_input_gradient) against the scatter it
// replaces (each window's maximum gets the window's gradient), on planes with ties and NaNs,
// for ResNet's stem pool (3x3, stride 2, padding 1) and others. The gather adds in a fixed
// order; the scatter is exact here (small integers), so the two must agree exactly.
TEST(MaxPoolBackward, GatherEqualsScatter) {
  struct Geo {
    int64_t h, w, k, s, p;
  };
  Rng rng(5);
  for (const Geo g : {Geo{9, 9, 3, 2, 1}, Geo{8, 8, 3, 2, 1}, Geo{7, 5, 2, 2, 0},
                      Geo{6, 6, 3, 1, 1}, Geo{5, 7, 3, 3, 0}, Geo{4, 4, 1, 1, 0}}) {
    const int64_t oh = (g.h + 2 * g.p - g.k) / g.s + 1, ow = (g.w + 2 * g.p - g.k) / g.s + 1;
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> x(size_t(g.h * g.w)), dy(size_t(oh * ow));
      for (float& v : x) v = float(rng.next() % 4);  // many ties
      if (trial % 4 == 0) x[rng.next() % x.size()] = std::nanf("");
      for (float& v : dy) v = float(rng.next() % 7) - 3.0f;
      const auto read_x = [&](int64_t r, int64_t c) { return x[size_t(r * g.w + c)]; };
      const auto read_dy = [&](int64_t r, int64_t c) { return dy[size_t(r * ow + c)]; };
      std::vector<float> scatter(x.size(), 0.0f);
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t c = 0; c < ow; ++c)
          scatter[size_t(pool_window_argmax(read_x, g.h, g.w, g.k, g.s, g.p, r, c))] +=
              read_dy(r, c);
      for (int64_t r = 0; r < g.h; ++r)
        for (int64_t c = 0; c < g.w; ++c)
          ASSERT_EQ(pool_input_gradient(read_x, read_dy, g.h, g.w, oh, ow, g.k, g.s, g.p, r, c),
                    scatter[size_t(r * g.w + c)])
              << g.h << "x" << g.w << " k" << g.k << " s" << g.s << " p" << g.p << " at " << r
              << "," << c;
      // The kernel's form: each window's maximum stored as its offset first, then gathered.
      std::vector<int64_t> offsets(dy.size());
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t c = 0; c < ow; ++c)
          offsets[size_t(r * ow + c)] = pool_window_offset(read_x, g.h, g.w, g.k, g.s, g.p, r, c);
      const auto read_offset = [&](int64_t r, int64_t c) { return offsets[size_t(r * ow + c)]; };
      for (int64_t r = 0; r < g.h; ++r)
        for (int64_t c = 0; c < g.w; ++c)
          ASSERT_EQ(pool_input_gradient_stored(read_offset, read_dy, oh, ow, g.k, g.s, g.p, r, c),
                    scatter[size_t(r * g.w + c)])
              << "stored offsets: " << g.h << "x" << g.w << " k" << g.k << " s" << g.s << " p"
              << g.p << " at " << r << "," << c;
      // And in 32-bit integers, as the kernels instantiate them.
      using I = int32_t;
      const auto x32 = [&](I r, I c) { return x[size_t(r * g.w + c)]; };
      const auto dy32 = [&](I r, I c) { return dy[size_t(r * ow + c)]; };
      for (I r = 0; r < I(oh); ++r)
        for (I c = 0; c < I(ow); ++c)
          ASSERT_EQ(pool_window_offset(x32, I(g.h), I(g.w), I(g.k), I(g.s), I(g.p), r, c),
                    offsets[size_t(r * ow + c)]);
      const auto offset32 = [&](I r, I c) { return I(offsets[size_t(r * ow + c)]); };
      for (I r = 0; r < I(g.h); ++r)
        for (I c = 0; c < I(g.w); ++c)
          ASSERT_EQ(pool_input_gradient_stored(offset32, dy32, I(oh), I(ow), I(g.k), I(g.s), I(g.p),
                                               r, c),
                    scatter[size_t(r * g.w + c)]);
    }
  }
}

// The window rule is torch's (max_pool2d's indices, printed by Debian's torch): the first of
// equal maxima; NaN wins, the last NaN in scan order.
// The 32-bit max-pool kernels' loop: below 2^31 elements is not enough, the index one grid
// stride past the last element must fit too (pool.cu; issue 41 item 7).
TEST(MaxPoolBackward, Int32PathLeavesRoomForTheGridStride) {
  const int64_t stride = int64_t(65535 * 4) * 256;  // blocks_for's largest grid, 256 threads
  const int64_t limit = int64_t(1) << 31;
  EXPECT_TRUE(grid_stride_fits_int32(limit - stride, stride));
  EXPECT_FALSE(grid_stride_fits_int32(limit - stride + 1, stride));
  EXPECT_FALSE(grid_stride_fits_int32(limit - 1000, stride)) << "i + stride would wrap negative";
  EXPECT_TRUE(grid_stride_fits_int32(int64_t(256) * 64 * 112 * 112, stride));  // ResNet's stem
  // What the loop does in int32 at the largest total allowed: its last index stays positive.
  const int64_t total = limit - stride;
  const int64_t last = total - 1 + stride;
  EXPECT_LE(last, int64_t(INT32_MAX));
}

TEST(MaxPoolBackward, TiesAndNanAsTorch) {
  const float nan = std::nanf("");
  const std::vector<float> ties = {5, 5, 1, 5, 2, 0, 0, 0, 1};      // torch: index 0
  const std::vector<float> nans = {1, nan, 3, 3, 2, nan, 0, 3, 1};  // torch: index 5
  const auto at = [](const std::vector<float>& v) {
    return [&v](int64_t r, int64_t c) { return v[size_t(r * 3 + c)]; };
  };
  EXPECT_EQ(pool_window_argmax(at(ties), 3, 3, 3, 1, 0, 0, 0), 0);
  EXPECT_EQ(pool_window_argmax(at(nans), 3, 3, 3, 1, 0, 0, 0), 5);
}

TEST(MaxPoolBackward, OutputsContainingAnInputMatchTheirWindows) {
  for (int64_t k = 1; k <= 4; ++k)
    for (int64_t s = 1; s <= 3; ++s)
      for (int64_t p = 0; p < k; ++p) {
        const int64_t n = 11, out = (n + 2 * p - k) / s + 1;
        for (int64_t i = 0; i < n; ++i) {
          int64_t lo = 0, hi = -1;
          pool_outputs_containing(i, k, s, p, out, &lo, &hi);
          for (int64_t o = 0; o < out; ++o) {
            const bool covers = o * s - p <= i && i < o * s - p + k;
            EXPECT_EQ(covers, lo <= o && o <= hi) << k << s << p << " i" << i << " o" << o;
          }
        }
      }
}

// The layouts the kernels convert between, against loops that spell them out.
TEST(Layouts, KrscIndexIsTheNhwcFilterLayout) {
  const int64_t K = 3, C = 5, R = 2, S = 3;
  std::vector<int> seen(size_t(K * C * R * S), 0);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t r = 0; r < R; ++r)
        for (int64_t s = 0; s < S; ++s) {
          const int64_t plain = ((k * C + c) * R + r) * S + s;
          const int64_t krsc = ((k * R + r) * S + s) * C + c;
          EXPECT_EQ(krsc_index(plain, C, R * S), krsc);
          ++seen[size_t(krsc)];
        }
  for (int v : seen) EXPECT_EQ(v, 1);
}

TEST(Layouts, ImageSourceIndexForEveryLayoutPair) {
  const int64_t N = 2, H = 3, W = 4, hw = H * W;
  for (bool dst_nhwc : {false, true})
    for (bool src_nhwc : {false, true})
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < 3; ++c)
          for (int64_t p = 0; p < hw; ++p) {
            const int64_t nchw = (n * 3 + c) * hw + p, nhwc = (n * hw + p) * 3 + c;
            int ch = -1;
            EXPECT_EQ(image_source_index(dst_nhwc ? nhwc : nchw, dst_nhwc, src_nhwc, hw, &ch),
                      src_nhwc ? nhwc : nchw);
            EXPECT_EQ(ch, c);
          }
}

}  // namespace
}  // namespace stoker::gpu
