// SPDX-License-Identifier: Apache-2.0
// The fully connected layer on cuBLAS, named as train/reference/linear.h's. cuBLAS plans per
// call (its GEMM heuristics cache on the handle), so its plan is the shape alone.
#pragma once

#include <cstdint>

#include "train/backend.h"
#include "train/gpu/cudnn_common.h"

namespace stoker::gpu {

// n rows of `in` features to `out`: x and w in `dtype` (torch's layouts), y f32; the GEMMs run
// under the math `precision` allows (tf32: its fast mode).
struct LinearShape {
  int n = 0, in = 0, out = 0;
  DType dtype = DType::f32;
  Precision precision = Precision::f32;
};

// y = x w^T (+ bias): x N x IN, w OUT x IN, bias OUT (f32, or null), y N x OUT (f32).
void linear_forward(const GpuExec& e, const LinearShape& s, const void* x, const void* w,
                    const float* bias, float* y);

// dw = dy^T x (OUT x IN, f32, written); dbias = dy summed over rows (f32, written; null: no
// bias); dx (+)= dy w by `beta_dx` (N x IN, in dtype). dy32 is dy in f32, dy the GEMMs' copy
// in dtype (dy32 itself under f32).
void linear_backward(const GpuExec& e, const LinearShape& s, const void* x, const void* w,
                     const float* dy32, const void* dy, float* dw, float* dbias, void* dx,
                     float beta_dx);

}  // namespace stoker::gpu
