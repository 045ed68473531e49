// SPDX-License-Identifier: Apache-2.0
// Written by tests/train/conformance_bounds.py --write; do not edit (the ctest
// conformance_bounds_reproduce recomputes it). Per cuda row of backend_conformance_test and kind
// of tensor: torch's own worst error on that row's step at the row's number format against fp64
// (max |diff| / max |ref| and ||diff|| / ||ref||, the worse of its two convolution
// implementations), and the bound the suite holds the backend to: C = 4 times it, and at
// least C units of the rounding of what that kind is stored in.
#pragma once

namespace stoker::test {

struct OracleBound {
  const char* row;
  const char* kind;
  double torch_max, torch_norm;  // torch's error
  double max, norm;              // the bounds
};

// One line per bound, as the script writes and reads it.
// clang-format off
inline constexpr OracleBound kOracleBounds[] = {
    {"r18_n4_40px_f32_nchw", "activation", 2.658e-06, 1.871e-06, 1.063e-05, 7.484e-06},
    {"r18_n4_40px_f32_nchw", "activation gradient", 1.999e-06, 1.258e-06, 7.998e-06, 5.033e-06},
    {"r18_n4_40px_f32_nchw", "parameter gradient", 3.145e-06, 2.243e-06, 1.258e-05, 8.970e-06},
    {"r18_n4_40px_f32_nchw", "running statistic", 6.970e-07, 6.639e-07, 2.788e-06, 2.656e-06},
    {"r18_n4_40px_f32_nchw", "logits", 8.458e-07, 9.253e-07, 3.383e-06, 3.701e-06},
    {"r18_n4_40px_f32_nchw", "eval logits", 8.755e-07, 8.219e-07, 3.502e-06, 3.287e-06},
    {"r18_n4_40px_f32_nchw", "loss", 1.155e-07, 1.155e-07, 4.622e-07, 4.622e-07},
    {"r18_n2_40px_f32_nhwc", "activation", 5.918e-06, 2.328e-06, 2.367e-05, 9.310e-06},
    {"r18_n2_40px_f32_nhwc", "activation gradient", 9.526e-06, 3.125e-06, 3.810e-05, 1.250e-05},
    {"r18_n2_40px_f32_nhwc", "parameter gradient", 9.289e-06, 3.622e-06, 3.716e-05, 1.449e-05},
    {"r18_n2_40px_f32_nhwc", "running statistic", 1.076e-06, 9.940e-07, 4.306e-06, 3.976e-06},
    {"r18_n2_40px_f32_nhwc", "logits", 8.505e-07, 9.457e-07, 3.402e-06, 3.783e-06},
    {"r18_n2_40px_f32_nhwc", "eval logits", 7.442e-07, 7.748e-07, 2.977e-06, 3.099e-06},
    {"r18_n2_40px_f32_nhwc", "loss", 1.364e-08, 1.364e-08, 2.384e-07, 2.384e-07},
    {"r18_n4_40px_u8_nchw", "activation", 3.211e-06, 2.090e-06, 1.284e-05, 8.358e-06},
    {"r18_n4_40px_u8_nchw", "activation gradient", 3.071e-06, 1.396e-06, 1.228e-05, 5.584e-06},
    {"r18_n4_40px_u8_nchw", "parameter gradient", 3.853e-06, 2.637e-06, 1.541e-05, 1.055e-05},
    {"r18_n4_40px_u8_nchw", "running statistic", 6.904e-07, 7.322e-07, 2.762e-06, 2.929e-06},
    {"r18_n4_40px_u8_nchw", "logits", 1.328e-06, 1.151e-06, 5.313e-06, 4.606e-06},
    {"r18_n4_40px_u8_nchw", "eval logits", 6.777e-07, 6.443e-07, 2.711e-06, 2.577e-06},
    {"r18_n4_40px_u8_nchw", "loss", 3.500e-08, 3.500e-08, 2.384e-07, 2.384e-07},
    {"r18_n2_40px_u8_nhwc", "activation", 6.224e-06, 2.305e-06, 2.490e-05, 9.220e-06},
    {"r18_n2_40px_u8_nhwc", "activation gradient", 4.635e-06, 2.789e-06, 1.854e-05, 1.116e-05},
    {"r18_n2_40px_u8_nhwc", "parameter gradient", 6.231e-06, 3.296e-06, 2.492e-05, 1.319e-05},
    {"r18_n2_40px_u8_nhwc", "running statistic", 1.159e-06, 1.009e-06, 4.636e-06, 4.035e-06},
    {"r18_n2_40px_u8_nhwc", "logits", 1.230e-06, 9.521e-07, 4.918e-06, 3.808e-06},
    {"r18_n2_40px_u8_nhwc", "eval logits", 7.069e-07, 6.010e-07, 2.828e-06, 2.404e-06},
    {"r18_n2_40px_u8_nhwc", "loss", 1.070e-08, 1.070e-08, 2.384e-07, 2.384e-07},
    {"r50_n2_40px_f32_nchw", "activation", 2.059e-05, 7.460e-06, 8.237e-05, 2.984e-05},
    {"r50_n2_40px_f32_nchw", "activation gradient", 2.029e-05, 1.028e-05, 8.118e-05, 4.113e-05},
    {"r50_n2_40px_f32_nchw", "parameter gradient", 2.392e-05, 1.158e-05, 9.566e-05, 4.633e-05},
    {"r50_n2_40px_f32_nchw", "running statistic", 2.585e-06, 2.732e-06, 1.034e-05, 1.093e-05},
    {"r50_n2_40px_f32_nchw", "logits", 2.179e-06, 2.258e-06, 8.717e-06, 9.032e-06},
    {"r50_n2_40px_f32_nchw", "eval logits", 1.328e-06, 1.312e-06, 5.312e-06, 5.246e-06},
    {"r50_n2_40px_f32_nchw", "loss", 1.279e-07, 1.279e-07, 5.118e-07, 5.118e-07},
    {"r18_n2_32px_f32_nchw_compute_nchw", "activation", 7.865e-03, 4.217e-04, 3.146e-02, 1.687e-03},
    {"r18_n2_32px_f32_nchw_compute_nchw", "activation gradient", 1.336e-02, 1.085e-02, 5.343e-02, 4.339e-02},
    {"r18_n2_32px_f32_nchw_compute_nchw", "parameter gradient", 1.828e-02, 1.263e-02, 7.310e-02, 5.053e-02},
    {"r18_n2_32px_f32_nchw_compute_nchw", "running statistic", 7.645e-05, 7.288e-05, 3.058e-04, 2.915e-04},
    {"r18_n2_32px_f32_nchw_compute_nchw", "logits", 7.042e-05, 1.090e-04, 2.817e-04, 4.358e-04},
    {"r18_n2_32px_f32_nchw_compute_nchw", "eval logits", 3.259e-06, 3.228e-06, 1.304e-05, 1.291e-05},
    {"r18_n2_32px_f32_nchw_compute_nchw", "loss", 1.326e-06, 1.326e-06, 5.304e-06, 5.304e-06},
    {"r18_n2_32px_f32_nchw_compute_nhwc", "activation", 7.865e-03, 4.217e-04, 3.146e-02, 1.687e-03},
    {"r18_n2_32px_f32_nchw_compute_nhwc", "activation gradient", 1.336e-02, 1.085e-02, 5.343e-02, 4.339e-02},
    {"r18_n2_32px_f32_nchw_compute_nhwc", "parameter gradient", 1.828e-02, 1.263e-02, 7.310e-02, 5.053e-02},
    {"r18_n2_32px_f32_nchw_compute_nhwc", "running statistic", 7.645e-05, 7.288e-05, 3.058e-04, 2.915e-04},
    {"r18_n2_32px_f32_nchw_compute_nhwc", "logits", 7.042e-05, 1.090e-04, 2.817e-04, 4.358e-04},
    {"r18_n2_32px_f32_nchw_compute_nhwc", "eval logits", 3.259e-06, 3.228e-06, 1.304e-05, 1.291e-05},
    {"r18_n2_32px_f32_nchw_compute_nhwc", "loss", 1.326e-06, 1.326e-06, 5.304e-06, 5.304e-06},
    {"r18_n4_40px_f32_nchw_tf32_compute_nchw", "activation", 3.338e-03, 1.778e-03, 1.335e-02, 7.114e-03},
    {"r18_n4_40px_f32_nchw_tf32_compute_nchw", "activation gradient", 7.708e-01, 6.526e-02, 3.083e+00, 2.610e-01},
    {"r18_n4_40px_f32_nchw_tf32_compute_nchw", "parameter gradient", 5.563e-01, 1.092e-01, 2.225e+00, 4.366e-01},
    {"r18_n4_40px_f32_nchw_tf32_compute_nchw", "running statistic", 6.781e-04, 6.726e-04, 2.713e-03, 2.691e-03},
    {"r18_n4_40px_f32_nchw_tf32_compute_nchw", "logits", 8.406e-04, 8.668e-04, 3.362e-03, 3.467e-03},
    {"r18_n4_40px_f32_nchw_tf32_compute_nchw", "eval logits", 5.506e-04, 5.395e-04, 2.202e-03, 2.158e-03},
    {"r18_n4_40px_f32_nchw_tf32_compute_nchw", "loss", 2.250e-05, 2.250e-05, 9.001e-05, 9.001e-05},
    {"r18_n4_40px_f32_nchw_tf32_compute_nhwc", "activation", 3.338e-03, 1.778e-03, 1.335e-02, 7.114e-03},
    {"r18_n4_40px_f32_nchw_tf32_compute_nhwc", "activation gradient", 7.708e-01, 6.526e-02, 3.083e+00, 2.610e-01},
    {"r18_n4_40px_f32_nchw_tf32_compute_nhwc", "parameter gradient", 5.563e-01, 1.092e-01, 2.225e+00, 4.366e-01},
    {"r18_n4_40px_f32_nchw_tf32_compute_nhwc", "running statistic", 6.781e-04, 6.726e-04, 2.713e-03, 2.691e-03},
    {"r18_n4_40px_f32_nchw_tf32_compute_nhwc", "logits", 8.406e-04, 8.668e-04, 3.362e-03, 3.467e-03},
    {"r18_n4_40px_f32_nchw_tf32_compute_nhwc", "eval logits", 5.506e-04, 5.395e-04, 2.202e-03, 2.158e-03},
    {"r18_n4_40px_f32_nchw_tf32_compute_nhwc", "loss", 2.250e-05, 2.250e-05, 9.001e-05, 9.001e-05},
    {"r18_n4_64px_f32_nchw_f16", "activation", 4.865e-03, 2.846e-03, 1.946e-02, 1.139e-02},
    {"r18_n4_64px_f32_nchw_f16", "activation gradient", 7.068e-01, 9.825e-02, 2.827e+00, 3.930e-01},
    {"r18_n4_64px_f32_nchw_f16", "parameter gradient", 6.317e-01, 1.504e-01, 2.527e+00, 6.014e-01},
    {"r18_n4_64px_f32_nchw_f16", "running statistic", 1.122e-03, 9.371e-04, 4.490e-03, 3.749e-03},
    {"r18_n4_64px_f32_nchw_f16", "logits", 2.131e-03, 1.988e-03, 8.523e-03, 7.953e-03},
    {"r18_n4_64px_f32_nchw_f16", "eval logits", 1.022e-03, 9.503e-04, 4.088e-03, 3.801e-03},
    {"r18_n4_64px_f32_nchw_f16", "loss", 1.730e-04, 1.730e-04, 6.921e-04, 6.921e-04},
    {"r18_n4_64px_f32_nchw_bf16", "activation", 3.706e-02, 2.186e-02, 1.483e-01, 8.745e-02},
    {"r18_n4_64px_f32_nchw_bf16", "activation gradient", 8.622e-01, 2.019e-01, 3.449e+00, 8.075e-01},
    {"r18_n4_64px_f32_nchw_bf16", "parameter gradient", 7.389e-01, 2.684e-01, 2.956e+00, 1.074e+00},
    {"r18_n4_64px_f32_nchw_bf16", "running statistic", 8.655e-03, 7.609e-03, 3.462e-02, 3.044e-02},
    {"r18_n4_64px_f32_nchw_bf16", "logits", 1.587e-02, 1.245e-02, 6.349e-02, 4.981e-02},
    {"r18_n4_64px_f32_nchw_bf16", "eval logits", 4.116e-03, 5.367e-03, 1.646e-02, 2.147e-02},
    {"r18_n4_64px_f32_nchw_bf16", "loss", 1.121e-03, 1.121e-03, 4.485e-03, 4.485e-03},
};
// clang-format on

}  // namespace stoker::test
