// SPDX-License-Identifier: Apache-2.0
// The oneDNN convolution (train/cpu/conv_dnnl) against the naive reference (train/reference):
// forward output, input gradient and weight gradient on ResNet's kinds of convolution, by
// normalised error (max |diff| / max |reference|); reuse of the planned primitives; bad shapes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common/error.h"
#include "train/cpu/conv_dnnl.h"
#include "train/cpu/dnnl_check.h"
#include "train/gradcheck.h"
#include "train/reference/conv.h"

namespace stoker::cpu {
namespace {

using test::uniform;

// fp32 with (at most) a few hundred terms per sum against a double-accumulated reference:
// rounding gives ~1e-7; a wrong index, tap or layout gives 1e-1 or more.
constexpr double kTol = 1e-5;

double max_normalised_error(const std::vector<float>& ref, const std::vector<float>& got) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff = std::max(diff, std::abs(double(ref[i]) - double(got[i])));
    scale = std::max(scale, std::abs(double(ref[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

ref::ConvShape to_ref(const ConvShape& s) {
  return {.n = s.n,
          .c = s.c,
          .h = s.h,
          .w = s.w,
          .k = s.k,
          .kh = s.kh,
          .kw = s.kw,
          .stride = s.stride,
          .pad = s.pad};
}

std::string name(const ConvShape& s) {
  return fmt::format("N{} C{} {}x{} K{} {}x{} s{} p{}", s.n, s.c, s.h, s.w, s.k, s.kh, s.kw,
                     s.stride, s.pad);
}

struct Case {
  ConvShape s;
  std::vector<float> x, w, dy;  // input, weight, output gradient
};

Case make_case(const ConvShape& s) {
  return {s, uniform(s.n * s.c * s.h * s.w, -1, 1, 1), uniform(s.k * s.c * s.kh * s.kw, -1, 1, 2),
          uniform(s.n * s.k * s.oh() * s.ow(), -1, 1, 3)};
}

// ResNet's kinds of convolution at small N/H/W, plus odd ones (channels no block size
// divides, non-square input, a floor in the output size).
const ConvShape kShapes[] = {
    {.n = 2, .c = 32, .h = 14, .w = 14, .k = 32, .kh = 3, .kw = 3, .stride = 1, .pad = 1},
    {.n = 2, .c = 32, .h = 14, .w = 14, .k = 64, .kh = 3, .kw = 3, .stride = 2, .pad = 1},
    {.n = 2, .c = 64, .h = 7, .w = 7, .k = 32, .kh = 1, .kw = 1, .stride = 1, .pad = 0},
    {.n = 2, .c = 32, .h = 14, .w = 14, .k = 64, .kh = 1, .kw = 1, .stride = 2, .pad = 0},
    {.n = 2, .c = 3, .h = 32, .w = 32, .k = 16, .kh = 7, .kw = 7, .stride = 2, .pad = 3},
    {.n = 3, .c = 5, .h = 9, .w = 8, .k = 7, .kh = 3, .kw = 3, .stride = 2, .pad = 1},
};

TEST(ConvDnnl, AgreesWithReference) {
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  for (const ConvShape& s : kShapes) {
    const Case c = make_case(s);
    std::vector<float> y_ref(c.dy.size()), dx_ref(c.x.size()), dw_ref(c.w.size());
    ref::conv2d_forward(y_ref.data(), c.x.data(), c.w.data(), to_ref(s));
    ref::conv2d_backward(dx_ref.data(), dw_ref.data(), c.dy.data(), c.x.data(), c.w.data(),
                         to_ref(s));

    ConvDnnl conv(engine, s);
    std::vector<float> y(c.dy.size()), dx(c.x.size()), dw(c.w.size());
    conv.forward(y.data(), c.x.data(), c.w.data());
    conv.backward(dx.data(), dw.data(), c.dy.data(), c.x.data(), c.w.data());

    const double ey = max_normalised_error(y_ref, y);
    const double edx = max_normalised_error(dx_ref, dx);
    const double edw = max_normalised_error(dw_ref, dw);
    std::printf("conv %s\n%s  errors: out %.2e  din %.2e  dweight %.2e\n", name(s).c_str(),
                conv.describe().c_str(), ey, edx, edw);
    EXPECT_LT(ey, kTol) << name(s) << " forward";
    EXPECT_LT(edx, kTol) << name(s) << " input gradient";
    EXPECT_LT(edw, kTol) << name(s) << " weight gradient";
  }
}

TEST(ConvDnnl, ExecutingTwiceGivesIdenticalResults) {
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  for (const ConvShape& s : {kShapes[1], kShapes[4]}) {
    const Case c = make_case(s);
    ConvDnnl conv(engine, s);
    std::vector<float> y1(c.dy.size()), dx1(c.x.size()), dw1(c.w.size());
    conv.forward(y1.data(), c.x.data(), c.w.data());
    conv.backward(dx1.data(), dw1.data(), c.dy.data(), c.x.data(), c.w.data());
    // Other buffers the second time, holding garbage: results are written, not accumulated.
    std::vector<float> y2(y1.size(), 7.f), dx2(dx1.size(), 7.f), dw2(dw1.size(), 7.f);
    conv.forward(y2.data(), c.x.data(), c.w.data());
    conv.backward(dx2.data(), dw2.data(), c.dy.data(), c.x.data(), c.w.data());
    EXPECT_EQ(y1, y2) << name(s);
    EXPECT_EQ(dx1, dx2) << name(s);
    EXPECT_EQ(dw1, dw2) << name(s);
  }
}

TEST(ConvDnnl, SkippingInputGradientLeavesWeightGradient) {
  // The network's first conv (7x7 on the image) plans no backward-data.
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const ConvShape s = kShapes[4];
  const Case c = make_case(s);
  ConvDnnl full(engine, s, /*need_din=*/true);
  ConvDnnl first(engine, s, /*need_din=*/false);
  EXPECT_FALSE(bool(first.bwd_data_pd));
  std::vector<float> dx(c.x.size()), dw_full(c.w.size()), dw_first(c.w.size());
  full.backward(dx.data(), dw_full.data(), c.dy.data(), c.x.data(), c.w.data());
  first.backward(nullptr, dw_first.data(), c.dy.data(), c.x.data(), c.w.data());
  EXPECT_EQ(dw_full, dw_first);
}

TEST(ConvDnnl, BadShapeIsAClearError) {
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  const ConvShape too_big{
      .n = 1, .c = 3, .h = 4, .w = 4, .k = 8, .kh = 7, .kw = 7, .stride = 1, .pad = 1};
  try {
    ConvDnnl conv(engine, too_big);
    FAIL() << "no error for a 7x7 kernel on a 6x6 padded input";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("larger than the padded input 6x6"), std::string::npos) << what;
  }
  const ConvShape zero{.n = 1, .c = 0, .h = 4, .w = 4, .k = 8, .kh = 3, .kw = 3};
  EXPECT_THROW(ConvDnnl(engine, zero), Error);
}

TEST(ConvDnnl, AFailedDnnlCallIsAnErrorNamingIt) {
  // A reorder between tensors of different sizes: oneDNN answers invalid_arguments.
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  using dnnl::memory;
  const memory a({{2, 3}, memory::data_type::f32, memory::format_tag::ab}, engine);
  const memory b({{4, 5}, memory::data_type::f32, memory::format_tag::ab}, engine);
  try {
    STOKER_DNNL(dnnl::reorder(a, b));
    FAIL() << "no error for a reorder 2x3 -> 4x5";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("dnnl::reorder(a, b)"), std::string::npos) << what;
    EXPECT_NE(what.find("invalid_arguments"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace stoker::cpu
