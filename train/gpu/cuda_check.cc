// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/cuda_check.h"

#include <cupti_activity.h>

#include "common/error.h"
#include "train/gpu/gpu_policy.h"

namespace stoker::gpu {

void check(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) [[likely]]
    return;
  char detail[512] = "";
  cudnnGetLastErrorString(detail, sizeof(detail));
  for (char& ch : detail)
    if (ch == '\n' || ch == '\r') ch = ' ';  // errors are one line
  throw CudnnStatusError(
      fmt::format("cuDNN: {} failed: {}{}{} at {}:{}", call, cudnnGetErrorString(status),
                  detail[0] ? ": " : "", detail, source_name(file), line),
      status);
}

void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) [[likely]]
    return;
  fail("cuBLAS: {} failed: {} ({}) at {}:{}", call, cublasGetStatusName(status),
       cublasGetStatusString(status), source_name(file), line);
}

void check(CUptiResult status, const char* call, const char* file, int line) {
  if (status == CUPTI_SUCCESS) [[likely]]
    return;
  const char* text = nullptr;
  if (cuptiGetResultString(status, &text) != CUPTI_SUCCESS || text == nullptr) text = "?";
  fail("CUPTI: {} failed: {} ({}) at {}:{}", call, int(status), text, source_name(file), line);
}

}  // namespace stoker::gpu
