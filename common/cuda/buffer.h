// SPDX-License-Identifier: Apache-2.0
// Owning buffers of device memory (cudaMalloc) and of pinned, portable host memory
// (cudaHostAlloc): one class over the two allocators. Allocated only while planning; moved,
// never copied; freed on destruction.
#pragma once

#include <cstddef>
#include <utility>

namespace stoker::gpu {

// An allocator: allocate(bytes) (stoker::Error when the runtime refuses), release(ptr).
struct DeviceMemory {
  static void* allocate(size_t bytes);
  static void release(void* p);
};
struct PinnedMemory {
  static void* allocate(size_t bytes);
  static void release(void* p);
};

template <class Memory>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes)
      : ptr_(bytes > 0 ? Memory::allocate(bytes) : nullptr), bytes_(bytes) {}
  ~Buffer() {
    if (ptr_) Memory::release(ptr_);
  }
  Buffer(Buffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* get() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

using DeviceBuffer = Buffer<DeviceMemory>;
using PinnedBuffer = Buffer<PinnedMemory>;

}  // namespace stoker::gpu
