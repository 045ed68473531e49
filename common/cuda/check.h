// SPDX-License-Identifier: Apache-2.0
// One way to check every GPU library call: STOKER_GPU(call) throws stoker::Error naming the
// call, the library, its status name and text, and the source line. Overloads on the status
// type pick the library, so call sites never say which: the CUDA runtime's is here (GPU decode
// and the backend share it); cuDNN's, cuBLAS's and CUPTI's are train/gpu/cuda_check.h's.
// Not for kernels' own errors beyond what cudaGetLastError reports after a launch.
#pragma once

#include <cuda_runtime_api.h>

namespace stoker::gpu {

// Throws stoker::Error when `status` is not cudaSuccess.
void check(cudaError_t status, const char* call, const char* file, int line);
// `file` without its folders, for the messages of every overload.
const char* source_name(const char* file);

}  // namespace stoker::gpu

#define STOKER_GPU(call) ::stoker::gpu::check((call), #call, __FILE__, __LINE__)
// After a kernel launch: launch-configuration errors (asynchronous faults surface later).
#define STOKER_GPU_LAUNCHED(what) ::stoker::gpu::check(cudaGetLastError(), what, __FILE__, __LINE__)
