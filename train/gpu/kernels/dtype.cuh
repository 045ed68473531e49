// SPDX-License-Identifier: Apache-2.0
// Loads and stores of the compute dtypes as float, for the elementwise kernels; and the
// dispatch from DType to the kernel template. Device code only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "train/gpu/kernels/kernels.h"

namespace stoker::gpu {

__device__ __forceinline__ float load_f(const float* p, int64_t i) {
  return p[i];
}
__device__ __forceinline__ float load_f(const __half* p, int64_t i) {
  return __half2float(p[i]);
}
__device__ __forceinline__ float load_f(const __nv_bfloat16* p, int64_t i) {
  return __bfloat162float(p[i]);
}
__device__ __forceinline__ void store_f(float* p, int64_t i, float v) {
  p[i] = v;
}
__device__ __forceinline__ void store_f(__half* p, int64_t i, float v) {
  p[i] = __float2half_rn(v);
}
__device__ __forceinline__ void store_f(__nv_bfloat16* p, int64_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}

// Calls f(T{}) with T the C++ type of `t`.
template <class F>
void with_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32:
      f(float{});
      break;
    case DType::f16:
      f(__half{});
      break;
    case DType::bf16:
      f(__nv_bfloat16{});
      break;
  }
}

inline unsigned blocks_for(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  return unsigned(b < 1 ? 1 : (b > 65535 * 4 ? 65535 * 4 : b));  // grid-stride beyond that
}

}  // namespace stoker::gpu
