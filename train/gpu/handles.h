// SPDX-License-Identifier: Apache-2.0
// Owning wrappers of the CUDA, cuDNN and cuBLAS handles a backend creates (streams, events,
// library handles): destroyed with their owner, so that an error thrown while planning leaks
// none of them (a study that builds several configurations in one process). Each converts to
// the raw handle for library calls; out() is the slot a Create call fills.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <utility>

#include "common/error.h"

namespace stoker::gpu {

template <class T, auto Destroy>
class Handle {
 public:
  Handle() = default;
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
  void reset() {
    if (h_ != T{}) Destroy(std::exchange(h_, T{}));
  }

 private:
  T h_{};
};

using CudnnHandle = Handle<cudnnHandle_t, cudnnDestroy>;
using CublasHandle = Handle<cublasHandle_t, cublasDestroy>;
using StreamHandle = Handle<cudaStream_t, cudaStreamDestroy>;
using EventHandle = Handle<cudaEvent_t, cudaEventDestroy>;

}  // namespace stoker::gpu
