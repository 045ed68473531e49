// SPDX-License-Identifier: Apache-2.0
// The arithmetic the GPU's optimiser kernels run (train/gpu/step_math.h), on the host: the
// SGD element update against train/sgd.cc (itself checked against torch) bit for bit over
// several steps and every option, and the loss scale's state machine against
// torch.cuda.amp.GradScaler's documented defaults.
#include "train/gpu/step_math.h"

#include <gtest/gtest.h>

#include <cmath>
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
