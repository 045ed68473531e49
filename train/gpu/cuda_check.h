// SPDX-License-Identifier: Apache-2.0
// One way to check every GPU library call: STOKER_GPU(call) throws stoker::Error naming the
// call, the library (CUDA runtime, cuDNN, cuBLAS, CUPTI), its status name and text, and the
// source line. Overloads on the status type pick the layer, so call sites never say which.
// Not for kernels' own errors beyond what cudaGetLastError reports after a launch.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <cupti_result.h>

namespace stoker::gpu {

// Each throws stoker::Error when `status` is not success (for cuDNN a CudnnStatusError,
// gpu_policy.h, which keeps the status).
void check(cudaError_t status, const char* call, const char* file, int line);
void check(cudnnStatus_t status, const char* call, const char* file, int line);
void check(cublasStatus_t status, const char* call, const char* file, int line);
void check(CUptiResult status, const char* call, const char* file, int line);

}  // namespace stoker::gpu

#define STOKER_GPU(call) ::stoker::gpu::check((call), #call, __FILE__, __LINE__)
// After a kernel launch: launch-configuration errors (asynchronous faults surface later).
#define STOKER_GPU_LAUNCHED(what) ::stoker::gpu::check(cudaGetLastError(), what, __FILE__, __LINE__)
