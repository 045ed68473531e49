// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/gpu_memory.h"

#include <cuda_runtime_api.h>

#include "train/gpu/cuda_check.h"

namespace stoker::gpu {

HostMemory pinned_host_memory() {
  HostMemory m;
  m.allocate = [](size_t bytes) { return PinnedMemory::allocate(bytes); };  // page-aligned
  m.release = [](void* p) {
    if (p) PinnedMemory::release(p);
  };
  m.pin = [](void* p, size_t bytes) {
    STOKER_GPU(cudaHostRegister(p, bytes, cudaHostRegisterPortable));
  };
  m.unpin = [](void* p) {
    if (p) cudaHostUnregister(p);
  };
  return m;
}

}  // namespace stoker::gpu
