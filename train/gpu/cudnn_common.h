// SPDX-License-Identifier: Apache-2.0
// What the GPU backend's ops (conv_cudnn.h, cudnn_batchnorm.h, cudnn_pool.h, cublas_linear.h)
// and the CudnnNet that binds them share: where an op executes (GpuExec), the scaling constants
// of cuDNN's and cuBLAS's calls and the dtype mapping. Internal to train/gpu.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <library_types.h>

#include <cstddef>

#include "train/gpu/kernels/kernels.h"

namespace stoker::gpu {

// Where an op's execute runs: the libraries' handles (both bound to `stream`) and the net's one
// workspace, sized at planning for the largest plan.
struct GpuExec {
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// alpha and beta of the library calls (their addresses are passed).
inline const float kOne = 1.0f, kZero = 0.0f;

inline cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

}  // namespace stoker::gpu
