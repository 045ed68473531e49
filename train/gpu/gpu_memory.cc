// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/gpu_memory.h"

#include <cuda_runtime_api.h>

#include <utility>

#include "train/gpu/cuda_check.h"

namespace stoker::gpu {

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) STOKER_GPU(cudaMalloc(&ptr_, bytes));
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  std::swap(ptr_, o.ptr_);
  std::swap(bytes_, o.bytes_);
  return *this;
}

PinnedBuffer::PinnedBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) STOKER_GPU(cudaHostAlloc(&ptr_, bytes, cudaHostAllocPortable));
}
PinnedBuffer::~PinnedBuffer() {
  if (ptr_) cudaFreeHost(ptr_);
}
PinnedBuffer::PinnedBuffer(PinnedBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  std::swap(ptr_, o.ptr_);
  std::swap(bytes_, o.bytes_);
  return *this;
}

HostMemory pinned_host_memory() {
  HostMemory m;
  m.allocate = [](size_t bytes) {
    void* p = nullptr;
    STOKER_GPU(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));  // page-aligned
    return p;
  };
  m.release = [](void* p) {
    if (p) cudaFreeHost(p);
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
