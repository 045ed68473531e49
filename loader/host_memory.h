// SPDX-License-Identifier: Apache-2.0
// How the loader gets the memory its batch tensors live in, so that a GPU run collates
// straight into pinned (page-locked) host memory the device can copy from asynchronously.
// Plain functions, so the loader depends on no device library; null functions: ordinary
// aligned heap memory, nothing pinned. The one type for it: a backend hands it out
// (train/backend.h, Backend::host_memory) and the loader takes it (LoaderConfig::memory).
#pragma once

#include <cstddef>
#include <functional>

namespace stoker {

struct HostMemory {
  std::function<void*(size_t bytes)> allocate;  // page-aligned, or throws stoker::Error
  std::function<void(void* p)> release;
  // Pin memory allocated elsewhere (the processes:N shared pool) for as long as it is
  // mapped; unpin before it is unmapped.
  std::function<void(void* p, size_t bytes)> pin;
  std::function<void(void* p)> unpin;
};

// Pins [p, p + bytes) for its lifetime when the hook has pin/unpin; else does nothing.
class PinnedRegion {
 public:
  PinnedRegion(const HostMemory& memory, void* p, size_t bytes) : unpin_(memory.unpin), p_(p) {
    if (memory.pin && unpin_) {
      memory.pin(p, bytes);
    } else {
      unpin_ = nullptr;
    }
  }
  ~PinnedRegion() {
    if (unpin_) unpin_(p_);
  }
  PinnedRegion(const PinnedRegion&) = delete;
  PinnedRegion& operator=(const PinnedRegion&) = delete;

 private:
  std::function<void(void*)> unpin_;
  void* p_;
};

}  // namespace stoker
