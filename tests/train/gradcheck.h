// SPDX-License-Identifier: Apache-2.0
// Finite-difference gradient checking for the reference layers: central differences of a
// scalar (summed in double) against an analytic gradient, judged by the normalised error
// ||numeric - analytic|| / ||numeric||, as ggml's test-backend-ops does.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace stoker::test {

// Uniform values in [lo, hi), reproducible from the seed.
inline std::vector<float> uniform(int64_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(gen);
  return v;
}

// The scalar a layer's output is reduced to: sum(out * r) with fixed random r, so dL/dout = r
// and every output element (with its own weight) takes part in the check.
inline double weighted_sum(const std::vector<float>& out, const std::vector<float>& r) {
  double s = 0;
  for (size_t i = 0; i < out.size(); ++i) s += double(out[i]) * double(r[i]);
  return s;
}

// dL/dx by central differences: x[i] +- h, L recomputed by `loss` (which reads x).
inline std::vector<double> numeric_grad(std::vector<float>& x, const std::function<double()>& loss,
                                        float h) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float keep = x[i];
    x[i] = keep + h;
    const double up = loss();
    x[i] = keep - h;
    const double down = loss();
    x[i] = keep;
    // Divide by the step actually taken: keep + h is rounded to float.
    g[i] = (up - down) / (double(keep + h) - double(keep - h));
  }
  return g;
}

// ||numeric - analytic|| / ||numeric|| (or the absolute norm when numeric is all zero).
inline double normalised_error(const std::vector<double>& numeric,
                               const std::vector<float>& analytic) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < numeric.size(); ++i) {
    const double d = numeric[i] - double(analytic[i]);
    diff += d * d;
    ref += numeric[i] * numeric[i];
  }
  return ref > 0 ? std::sqrt(diff / ref) : std::sqrt(diff);
}

}  // namespace stoker::test
