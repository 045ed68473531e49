// SPDX-License-Identifier: Apache-2.0
#include "common/cuda/check.h"

#include <cstring>

#include "common/error.h"

namespace stoker::gpu {

const char* source_name(const char* file) {
  const char* slash = std::strrchr(file, '/');
  return slash ? slash + 1 : file;
}

void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) [[likely]]
    return;
  fail("CUDA runtime: {} failed: {} ({}) at {}:{}", call, cudaGetErrorName(status),
       cudaGetErrorString(status), source_name(file), line);
}

}  // namespace stoker::gpu
