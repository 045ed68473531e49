// SPDX-License-Identifier: Apache-2.0
// STOKER_GPU(call) (common/cuda/check.h) for the backend's libraries: the overloads for
// cuDNN's, cuBLAS's and CUPTI's statuses, beside the CUDA runtime's there. Call sites never
// say which library: the status type picks the overload.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>
#include <cupti_result.h>

#include "common/cuda/check.h"

namespace stoker::gpu {

// Each throws stoker::Error when `status` is not success (for cuDNN a CudnnStatusError,
// gpu_policy.h, which keeps the status).
void check(cudnnStatus_t status, const char* call, const char* file, int line);
void check(cublasStatus_t status, const char* call, const char* file, int line);
void check(CUptiResult status, const char* call, const char* file, int line);

}  // namespace stoker::gpu
