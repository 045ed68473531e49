// SPDX-License-Identifier: Apache-2.0
// What the files of CudnnNet (cudnn_net.cc and one per layer kind: cudnn_conv.cc,
// cudnn_batchnorm.cc, cudnn_pool.cc, cudnn_activation.cc, cudnn_fc.cc, cudnn_optimizer.cc)
// share: the scaling constants of cuDNN's and cuBLAS's calls and the dtype mapping. Internal
// to train/gpu.
#pragma once

#include <library_types.h>

#include "train/gpu/kernels/kernels.h"

namespace stoker::gpu {

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
