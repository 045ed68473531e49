// SPDX-License-Identifier: Apache-2.0
// Finite-difference gradient checks of every reference layer's backward: each gradient the
// layer produces (input and parameters) against central differences of its own forward, on
// small shapes, including the odd ones (non-square kernels, stride 2 with padding).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "gradcheck.h"
#include "train/reference/activation.h"
#include "train/reference/batchnorm.h"
#include "train/reference/conv.h"
#include "train/reference/linear.h"
#include "train/reference/loss.h"
#include "train/reference/pool.h"

namespace stoker::ref {
namespace {

using test::normalised_error;
using test::numeric_grad;
using test::uniform;
using test::weighted_sum;

// Normalised error bound. With h = 1e-2 the float rounding of the forward contributes about
// 1e-5 and the truncation of the nonlinear layers (batch norm, softmax) about 1e-4; a wrong
// gradient (a missing term, a wrong index, a factor off by 1%) is 1e-2 or more.
constexpr double kTol = 1e-3;
constexpr float kStep = 1e-2f;

void expect_close(const char* what, const std::vector<double>& numeric,
                  const std::vector<float>& analytic) {
  const double err = normalised_error(numeric, analytic);
  testing::Test::RecordProperty(what, std::to_string(err));
  EXPECT_LT(err, kTol) << what;
  std::printf("  %-34s normalised error %.2e\n", what, err);
}

TEST(ReferenceGradcheck, CheckFailsOnAWrongGradient) {
  // The checker itself: the true gradient of sum(x^2) passes, 1% off or one entry wrong fails.
  std::vector<float> x = uniform(50, -1, 1, 7);
  auto loss = [&] {
    double s = 0;
    for (float v : x) s += double(v) * v;
    return s;
  };
  std::vector<float> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) g[i] = 2 * x[i];
  const std::vector<double> numeric = numeric_grad(x, loss, kStep);
  EXPECT_LT(normalised_error(numeric, g), kTol);
  std::vector<float> scaled = g;
  for (float& v : scaled) v *= 1.01f;
  EXPECT_GT(normalised_error(numeric, scaled), kTol);
  std::vector<float> one_wrong = g;
  one_wrong[17] = -one_wrong[17];
  EXPECT_GT(normalised_error(numeric, one_wrong), kTol);
}

TEST(ReferenceGradcheck, Conv2d) {
  const ConvShape shapes[] = {
      {.n = 2, .c = 3, .h = 7, .w = 6, .k = 4, .kh = 3, .kw = 3, .stride = 2, .pad = 1},
      {.n = 2, .c = 3, .h = 5, .w = 5, .k = 2, .kh = 1, .kw = 1, .stride = 1, .pad = 0},
      {.n = 1, .c = 2, .h = 9, .w = 8, .k = 3, .kh = 7, .kw = 7, .stride = 2, .pad = 3},
      {.n = 1, .c = 2, .h = 5, .w = 6, .k = 2, .kh = 3, .kw = 2, .stride = 3, .pad = 1},
  };
  for (const ConvShape& s : shapes) {
    std::vector<float> x = uniform(s.n * s.c * s.h * s.w, -1, 1, 1);
    std::vector<float> w = uniform(s.k * s.c * s.kh * s.kw, -1, 1, 2);
    std::vector<float> out(static_cast<size_t>(s.n * s.k * s.oh() * s.ow()));
    const std::vector<float> r = uniform(int64_t(out.size()), -1, 1, 3);
    auto loss = [&] {
      conv2d_forward(out.data(), x.data(), w.data(), s);
      return weighted_sum(out, r);
    };
    std::vector<float> dx(x.size()), dw(w.size());
    conv2d_backward(dx.data(), dw.data(), r.data(), x.data(), w.data(), s);
    std::printf("conv %ldx%ld stride %ld pad %ld\n", long(s.kh), long(s.kw), long(s.stride),
                long(s.pad));
    expect_close("conv din", numeric_grad(x, loss, kStep), dx);
    expect_close("conv dweight", numeric_grad(w, loss, kStep), dw);

    // Skipping the input gradient leaves the weight gradient unchanged.
    std::vector<float> dw_only(w.size());
    conv2d_backward(nullptr, dw_only.data(), r.data(), x.data(), w.data(), s);
    EXPECT_EQ(dw_only, dw);
  }
}

TEST(ReferenceGradcheck, BatchNormTraining) {
  const BatchNormShape s{.n = 3, .c = 2, .h = 3, .w = 4};
  const int64_t count = s.n * s.c * s.h * s.w;
  std::vector<float> x = uniform(count, -1, 2, 11);  // mean away from 0
  std::vector<float> gamma = uniform(s.c, 0.5f, 1.5f, 12);
  std::vector<float> beta = uniform(s.c, -0.5f, 0.5f, 13);
  const std::vector<float> r = uniform(count, -1, 1, 14);
  std::vector<float> out(static_cast<size_t>(count)), mean(static_cast<size_t>(s.c)),
      rstd(static_cast<size_t>(s.c));
  std::vector<float> run_mean(static_cast<size_t>(s.c)), run_var(static_cast<size_t>(s.c));
  auto loss = [&] {
    batchnorm_forward_train(out.data(), mean.data(), rstd.data(), run_mean.data(), run_var.data(),
                            x.data(), gamma.data(), beta.data(), s);
    return weighted_sum(out, r);
  };
  loss();  // the saved statistics of the unperturbed input
  std::vector<float> dx(x.size()), dgamma(static_cast<size_t>(s.c)),
      dbeta(static_cast<size_t>(s.c));
  batchnorm_backward(dx.data(), dgamma.data(), dbeta.data(), r.data(), x.data(), gamma.data(),
                     mean.data(), rstd.data(), s);
  expect_close("batchnorm din", numeric_grad(x, loss, kStep), dx);
  expect_close("batchnorm dgamma", numeric_grad(gamma, loss, kStep), dgamma);
  expect_close("batchnorm dbeta", numeric_grad(beta, loss, kStep), dbeta);
}

TEST(ReferenceGradcheck, Relu) {
  // Values at least 0.1 away from the kink, so x +- h stays on one side of it.
  std::vector<float> x = uniform(60, 0.1f, 1, 21);
  const std::vector<float> sign = uniform(60, -1, 1, 22);
  for (size_t i = 0; i < x.size(); ++i) x[i] = sign[i] < 0 ? -x[i] : x[i];
  const std::vector<float> r = uniform(60, -1, 1, 23);
  std::vector<float> out(x.size());
  auto loss = [&] {
    relu_forward(out.data(), x.data(), int64_t(x.size()));
    return weighted_sum(out, r);
  };
  loss();
  std::vector<float> dx(x.size());
  relu_backward(dx.data(), r.data(), out.data(), int64_t(x.size()));
  expect_close("relu din", numeric_grad(x, loss, kStep), dx);
}

TEST(ReferenceGradcheck, Add) {
  std::vector<float> a = uniform(20, -1, 1, 31), b = uniform(20, -1, 1, 32);
  const std::vector<float> r = uniform(20, -1, 1, 33);
  std::vector<float> out(a.size());
  auto loss = [&] {
    add_forward(out.data(), a.data(), b.data(), int64_t(a.size()));
    return weighted_sum(out, r);
  };
  std::vector<float> da(a.size()), db(b.size());
  add_backward(da.data(), db.data(), r.data(), int64_t(a.size()));
  expect_close("add da", numeric_grad(a, loss, kStep), da);
  expect_close("add db", numeric_grad(b, loss, kStep), db);
}

TEST(ReferenceGradcheck, MaxPool2d) {
  const PoolShape shapes[] = {
      {.n = 2, .c = 2, .h = 7, .w = 6, .k = 3, .stride = 2, .pad = 1},
      {.n = 1, .c = 2, .h = 6, .w = 6, .k = 2, .stride = 2, .pad = 0},
      {.n = 1, .c = 1, .h = 5, .w = 7, .k = 3, .stride = 1, .pad = 1},  // heavy overlap
  };
  for (const PoolShape& s : shapes) {
    // Distinct values 0.1 apart, shuffled: no window's max changes under a +-h step.
    const int64_t count = s.n * s.c * s.h * s.w;
    std::vector<float> x(static_cast<size_t>(count));
    std::iota(x.begin(), x.end(), 0.0f);
    std::shuffle(x.begin(), x.end(), std::mt19937(41));
    for (float& v : x) v = 0.1f * v - 1;
    std::vector<float> out(static_cast<size_t>(s.n * s.c * s.oh() * s.ow()));
    std::vector<int64_t> argmax(out.size());
    const std::vector<float> r = uniform(int64_t(out.size()), -1, 1, 42);
    auto loss = [&] {
      maxpool2d_forward(out.data(), argmax.data(), x.data(), s);
      return weighted_sum(out, r);
    };
    loss();
    std::vector<float> dx(x.size());
    maxpool2d_backward(dx.data(), r.data(), argmax.data(), s);
    std::printf("maxpool %ldx%ld stride %ld pad %ld\n", long(s.k), long(s.k), long(s.stride),
                long(s.pad));
    expect_close("maxpool din", numeric_grad(x, loss, kStep), dx);
  }
}

TEST(ReferenceGradcheck, GlobalAvgPool) {
  const int64_t n = 2, c = 3, h = 3, w = 5;
  std::vector<float> x = uniform(n * c * h * w, -1, 1, 51);
  const std::vector<float> r = uniform(n * c, -1, 1, 52);
  std::vector<float> out(static_cast<size_t>(n * c));
  auto loss = [&] {
    global_avgpool_forward(out.data(), x.data(), n, c, h, w);
    return weighted_sum(out, r);
  };
  std::vector<float> dx(x.size());
  global_avgpool_backward(dx.data(), r.data(), n, c, h, w);
  expect_close("avgpool din", numeric_grad(x, loss, kStep), dx);
}

TEST(ReferenceGradcheck, Linear) {
  const LinearShape s{.n = 3, .in = 7, .out = 5};
  std::vector<float> x = uniform(s.n * s.in, -1, 1, 61);
  std::vector<float> w = uniform(s.out * s.in, -1, 1, 62);
  std::vector<float> b = uniform(s.out, -1, 1, 63);
  const std::vector<float> r = uniform(s.n * s.out, -1, 1, 64);
  std::vector<float> out(static_cast<size_t>(s.n * s.out));
  auto loss = [&] {
    linear_forward(out.data(), x.data(), w.data(), b.data(), s);
    return weighted_sum(out, r);
  };
  std::vector<float> dx(x.size()), dw(w.size()), db(b.size());
  linear_backward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), s);
  expect_close("linear din", numeric_grad(x, loss, kStep), dx);
  expect_close("linear dweight", numeric_grad(w, loss, kStep), dw);
  expect_close("linear dbias", numeric_grad(b, loss, kStep), db);
}

TEST(ReferenceGradcheck, CrossEntropy) {
  for (float smoothing : {0.0f, 0.1f, 1.0f}) {
    const CrossEntropyShape s{.n = 4, .k = 6, .label_smoothing = smoothing};
    std::vector<float> logits = uniform(s.n * s.k, -3, 3, 71);
    const std::vector<int32_t> targets = {0, 5, 2, 2};
    std::vector<float> probs(logits.size());
    auto loss = [&] {
      return double(cross_entropy_forward(probs.data(), logits.data(), targets.data(), s));
    };
    loss();
    std::vector<float> dlogits(logits.size());
    cross_entropy_backward(dlogits.data(), probs.data(), targets.data(), s);
    std::printf("cross-entropy label_smoothing %.1f\n", double(smoothing));
    expect_close("cross-entropy dlogits", numeric_grad(logits, loss, kStep), dlogits);
  }
}

}  // namespace
}  // namespace stoker::ref
