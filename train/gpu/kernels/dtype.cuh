// SPDX-License-Identifier: Apache-2.0
// The dispatch from DType to the kernel template, and the grid size of the elementwise
// kernels; the loads and stores as float are common/cuda/float_io.cuh's. Device code only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/cuda/float_io.cuh"
#include "common/error.h"
#include "train/gpu/kernels/kernels.h"

namespace stoker::gpu {

// Calls f(T{}) with T the C++ type of `t`, a compute dtype (f32, f16 or bf16; never u8).
template <class F>
void with_dtype(DType t, F&& f) {
  switch (t) {
    case DType::u8:
      STOKER_CHECK_MSG(false, "u8 is not a compute dtype");
      break;
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
