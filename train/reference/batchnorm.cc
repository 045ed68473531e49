// SPDX-License-Identifier: Apache-2.0
// Naive batch normalisation: statistics in double, two passes (mean, then squared
// deviations) rather than E[x^2] - E[x]^2, which cancels badly when |mean| >> std.
#include "train/reference/batchnorm.h"

#include <cmath>

#include "common/error.h"

namespace stoker::ref {
namespace {

void check_shape(const BatchNormShape& s) {
  STOKER_CHECK(s.n > 0 && s.c > 0 && s.h > 0 && s.w > 0);
  STOKER_CHECK(s.eps > 0 && s.momentum >= 0 && s.momentum <= 1);
}

}  // namespace

void batchnorm_forward_train(float* out, float* mean, float* rstd, float* running_mean,
                             float* running_var, const float* in, const float* gamma,
                             const float* beta, const BatchNormShape& s) {
  check_shape(s);
  const int64_t hw = s.h * s.w, m = s.n * hw;
  STOKER_CHECK_MSG(m > 1, "training batch norm needs more than one value per channel, got {}", m);
  for (int64_t c = 0; c < s.c; ++c) {
    double sum = 0;
    for (int64_t n = 0; n < s.n; ++n) {
      const float* x = in + (n * s.c + c) * hw;  // H x W
      for (int64_t i = 0; i < hw; ++i) sum += x[i];
    }
    const double mu = sum / double(m);
    double sq = 0;
    for (int64_t n = 0; n < s.n; ++n) {
      const float* x = in + (n * s.c + c) * hw;  // H x W
      for (int64_t i = 0; i < hw; ++i) sq += (x[i] - mu) * (x[i] - mu);
    }
    const double var = sq / double(m);  // biased: what normalises the batch
    const double r = 1.0 / std::sqrt(var + double(s.eps));
    for (int64_t n = 0; n < s.n; ++n) {
      const float* x = in + (n * s.c + c) * hw;  // H x W
      float* y = out + (n * s.c + c) * hw;       // H x W
      for (int64_t i = 0; i < hw; ++i) y[i] = float(gamma[c] * ((x[i] - mu) * r) + beta[c]);
    }
    mean[c] = float(mu);
    rstd[c] = float(r);
    const double mom = s.momentum;
    running_mean[c] = float((1 - mom) * running_mean[c] + mom * mu);
    running_var[c] = float((1 - mom) * running_var[c] + mom * sq / double(m - 1));  // unbiased
  }
}

void batchnorm_forward_infer(float* out, const float* in, const float* gamma, const float* beta,
                             const float* running_mean, const float* running_var,
                             const BatchNormShape& s) {
  check_shape(s);
  const int64_t hw = s.h * s.w;
  for (int64_t c = 0; c < s.c; ++c) {
    STOKER_CHECK(running_var[c] >= 0);
    const double r = 1.0 / std::sqrt(double(running_var[c]) + double(s.eps));
    for (int64_t n = 0; n < s.n; ++n) {
      const float* x = in + (n * s.c + c) * hw;  // H x W
      float* y = out + (n * s.c + c) * hw;       // H x W
      for (int64_t i = 0; i < hw; ++i) {
        y[i] = float(gamma[c] * ((x[i] - double(running_mean[c])) * r) + beta[c]);
      }
    }
  }
}

void batchnorm_backward(float* din, float* dgamma, float* dbeta, const float* dout, const float* in,
                        const float* gamma, const float* mean, const float* rstd,
                        const BatchNormShape& s) {
  check_shape(s);
  const int64_t hw = s.h * s.w, m = s.n * hw;
  for (int64_t c = 0; c < s.c; ++c) {
    const double mu = mean[c], r = rstd[c];
    // With xhat = (x - mu) * r and y = gamma * xhat + beta:
    //   dbeta = sum dy, dgamma = sum dy * xhat,
    //   dx = gamma * r / M * (M * dy - dbeta - xhat * dgamma),
    // the last two terms being the gradient through the batch mean and variance.
    double sum_dy = 0, sum_dy_xhat = 0;
    for (int64_t n = 0; n < s.n; ++n) {
      const float* x = in + (n * s.c + c) * hw;    // H x W
      const float* g = dout + (n * s.c + c) * hw;  // H x W
      for (int64_t i = 0; i < hw; ++i) {
        sum_dy += g[i];
        sum_dy_xhat += g[i] * ((x[i] - mu) * r);
      }
    }
    const double scale = gamma[c] * r / double(m);
    for (int64_t n = 0; n < s.n; ++n) {
      const float* x = in + (n * s.c + c) * hw;    // H x W
      const float* g = dout + (n * s.c + c) * hw;  // H x W
      float* dx = din + (n * s.c + c) * hw;        // H x W (may be g)
      for (int64_t i = 0; i < hw; ++i) {
        const double xhat = (x[i] - mu) * r;
        dx[i] = float(scale * (double(m) * g[i] - sum_dy - xhat * sum_dy_xhat));
      }
    }
    dgamma[c] = float(sum_dy_xhat);
    dbeta[c] = float(sum_dy);
  }
}

}  // namespace stoker::ref
