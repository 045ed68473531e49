// SPDX-License-Identifier: Apache-2.0
#include "common/cuda/buffer.h"

#include <cuda_runtime_api.h>

#include "common/cuda/check.h"

namespace stoker::gpu {

void* DeviceMemory::allocate(size_t bytes) {
  void* p = nullptr;
  STOKER_GPU(cudaMalloc(&p, bytes));
  return p;
}
void DeviceMemory::release(void* p) {
  cudaFree(p);
}

void* PinnedMemory::allocate(size_t bytes) {
  void* p = nullptr;
  STOKER_GPU(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));  // page-aligned
  return p;
}
void PinnedMemory::release(void* p) {
  cudaFreeHost(p);
}

}  // namespace stoker::gpu
