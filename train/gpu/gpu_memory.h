// SPDX-License-Identifier: Apache-2.0
// Owning handles for device and pinned host memory, and the HostMemory hook (loader/host_memory.h)
// that makes a loader collate straight into pinned memory (cudaHostAlloc, or cudaHostRegister for
// memory mapped elsewhere), so H2D copies run asynchronously at full bus speed.
#pragma once

#include <cstddef>

#include "train/backend.h"

namespace stoker::gpu {

// cudaMalloc'ed bytes, freed on destruction. Allocated only while planning.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

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

// cudaHostAlloc'ed (pinned, portable) bytes.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& o) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

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

// The hook a GPU backend hands the loader: pinned allocations and registration.
HostMemory pinned_host_memory();

}  // namespace stoker::gpu
