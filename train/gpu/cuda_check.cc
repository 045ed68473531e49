// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/cuda_check.h"

#include <cupti_activity.h>

#include <cstring>

#include "common/error.h"
#include "train/gpu/gpu_policy.h"

namespace stoker::gpu {
namespace {

const char* base(const char* file) {
  const char* slash = std::strrchr(file, '/');
  return slash ? slash + 1 : file;
}

}  // namespace

void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) [[likely]]
    return;
  fail("CUDA runtime: {} failed: {} ({}) at {}:{}", call, cudaGetErrorName(status),
       cudaGetErrorString(status), base(file), line);
}

void check(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) [[likely]]
    return;
  char detail[512] = "";
  cudnnGetLastErrorString(detail, sizeof(detail));
  for (char& ch : detail)
    if (ch == '\n' || ch == '\r') ch = ' ';  // errors are one line
  throw CudnnStatusError(
      fmt::format("cuDNN: {} failed: {}{}{} at {}:{}", call, cudnnGetErrorString(status),
                  detail[0] ? ": " : "", detail, base(file), line),
      status);
}

void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) [[likely]]
    return;
  fail("cuBLAS: {} failed: {} ({}) at {}:{}", call, cublasGetStatusName(status),
       cublasGetStatusString(status), base(file), line);
}

void check(CUptiResult status, const char* call, const char* file, int line) {
  if (status == CUPTI_SUCCESS) [[likely]]
    return;
  const char* text = nullptr;
  if (cuptiGetResultString(status, &text) != CUPTI_SUCCESS || text == nullptr) text = "?";
  fail("CUPTI: {} failed: {} ({}) at {}:{}", call, int(status), text, base(file), line);
}

}  // namespace stoker::gpu
