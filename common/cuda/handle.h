// SPDX-License-Identifier: Apache-2.0
// One owning wrapper for every handle a GPU library creates and destroys by a plain call
// (streams, events, cuDNN and cuBLAS handles and descriptors): destroyed with its owner, so
// that an error thrown while planning leaks none of them (a study that builds several
// configurations in one process). Each converts to the raw handle for library calls; out()
// is the slot a Create call fills. The library-specific aliases are train/gpu/handles.h's.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "common/error.h"

namespace stoker::gpu {

template <class T, auto Destroy>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T h) : h_(h) {}  // takes ownership of a handle just created
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, T{})) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, T{});
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  operator T() const { return h_; }  // NOLINT: used wherever the library takes the handle
  T get() const { return h_; }
  // Where cudnnCreate / cudaStreamCreate... writes the new handle; must be empty.
  T* out() {
    STOKER_CHECK(h_ == T{});
    return &h_;
  }
  // Destroys the handle held, if any, and holds `h` (ownership taken) instead.
  void reset(T h = T{}) {
    if (h_ != T{}) Destroy(h_);
    h_ = h;
  }

 private:
  T h_{};
};

using StreamHandle = Handle<cudaStream_t, cudaStreamDestroy>;
using EventHandle = Handle<cudaEvent_t, cudaEventDestroy>;

}  // namespace stoker::gpu
