// SPDX-License-Identifier: Apache-2.0
// Input conversion, ReLU, residual add, gradient pass-through and the FC bias.
#include "train/gpu/cuda_check.h"
#include "train/gpu/kernels/dtype.cuh"

namespace stoker::gpu {

// Outside the anonymous namespace: its name is what CUPTI reports (kStepMarkerName).
__global__ void stoker_step_marker() {}

void step_marker(cudaStream_t stream) {
  stoker_step_marker<<<1, 1, 0, stream>>>();
  STOKER_GPU_LAUNCHED("step_marker");
}

namespace {

constexpr int kThreads = 256;

#define STOKER_GRID_STRIDE(i, n)                                            \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += int64_t(gridDim.x) * blockDim.x)

template <class S, class T>
__global__ void convert_input_kernel(InputConversion c, const S* src, T* dst) {
  const int64_t hw = c.h * c.w, total = c.n * 3 * hw;
  STOKER_GRID_STRIDE(i, total) {
    int ch = 0;  // i indexes the destination
    const int64_t s = image_source_index(i, c.dst_nhwc, c.src_nhwc, hw, &ch);
    float v = float(src[s]);
    if (c.src_u8) v = (v / 255.0f - c.mean[ch]) * c.inv_std[ch];
    store_f(dst, i, v);
  }
}

template <class T>
__global__ void relu_forward_kernel(const T* x, T* y, int64_t n) {
  STOKER_GRID_STRIDE(i, n) store_f(y, i, relu_value(load_f(x, i)));  // NaN propagates
}

template <class T>
__global__ void relu_backward_kernel(const T* y, const T* dy, T* dx, int64_t n, bool acc) {
  STOKER_GRID_STRIDE(i, n) {
    const float g = relu_gradient(load_f(y, i), load_f(dy, i));
    store_f(dx, i, acc ? load_f(dx, i) + g : g);
  }
}

template <class T>
__global__ void add_kernel(const T* a, const T* b, T* y, int64_t n) {
  STOKER_GRID_STRIDE(i, n) store_f(y, i, load_f(a, i) + load_f(b, i));
}

template <class T>
__global__ void pass_kernel(const T* src, T* dst, int64_t n, bool acc) {
  STOKER_GRID_STRIDE(i, n) store_f(dst, i, acc ? load_f(dst, i) + load_f(src, i) : load_f(src, i));
}

__global__ void add_bias_kernel(float* logits, const float* bias, int64_t n, int64_t classes) {
  STOKER_GRID_STRIDE(i, n * classes) logits[i] += bias[i % classes];
}

// One thread per class, rows in order: deterministic, and n is a batch (small).
__global__ void bias_gradient_kernel(const float* d, float* db, int64_t n, int64_t classes) {
  STOKER_GRID_STRIDE(c, classes) {
    float s = 0;
    for (int64_t r = 0; r < n; ++r) s += d[r * classes + c];
    db[c] = s;
  }
}

}  // namespace

void convert_input(const InputConversion& c, const void* src, void* dst, cudaStream_t stream) {
  const int64_t total = c.n * 3 * c.h * c.w;
  with_dtype(c.dtype, [&](auto t) {
    using T = decltype(t);
    if (c.src_u8)
      convert_input_kernel<<<blocks_for(total, kThreads), kThreads, 0, stream>>>(
          c, static_cast<const uint8_t*>(src), static_cast<T*>(dst));
    else
      convert_input_kernel<<<blocks_for(total, kThreads), kThreads, 0, stream>>>(
          c, static_cast<const float*>(src), static_cast<T*>(dst));
  });
  STOKER_GPU_LAUNCHED("convert_input");
}

void relu_forward(DType t, const void* x, void* y, int64_t n, cudaStream_t stream) {
  with_dtype(t, [&](auto v) {
    using T = decltype(v);
    relu_forward_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                                          static_cast<T*>(y), n);
  });
  STOKER_GPU_LAUNCHED("relu_forward");
}

void relu_backward(DType t, const void* y, const void* dy, void* dx, int64_t n, bool accumulate,
                   cudaStream_t stream) {
  with_dtype(t, [&](auto v) {
    using T = decltype(v);
    relu_backward_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(
        static_cast<const T*>(y), static_cast<const T*>(dy), static_cast<T*>(dx), n, accumulate);
  });
  STOKER_GPU_LAUNCHED("relu_backward");
}

void add_forward(DType t, const void* a, const void* b, void* y, int64_t n, cudaStream_t stream) {
  with_dtype(t, [&](auto v) {
    using T = decltype(v);
    add_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y), n);
  });
  STOKER_GPU_LAUNCHED("add_forward");
}

void pass_gradient(DType t, const void* src, void* dst, int64_t n, bool accumulate,
                   cudaStream_t stream) {
  if (!accumulate) {
    STOKER_GPU(
        cudaMemcpyAsync(dst, src, size_t(n) * dtype_bytes(t), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  with_dtype(t, [&](auto v) {
    using T = decltype(v);
    pass_kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(static_cast<const T*>(src),
                                                                  static_cast<T*>(dst), n, true);
  });
  STOKER_GPU_LAUNCHED("pass_gradient");
}

void add_bias(float* logits, const float* bias, int64_t n, int64_t classes, cudaStream_t stream) {
  add_bias_kernel<<<blocks_for(n * classes, kThreads), kThreads, 0, stream>>>(logits, bias, n,
                                                                              classes);
  STOKER_GPU_LAUNCHED("add_bias");
}

void bias_gradient(const float* dlogits, float* dbias, int64_t n, int64_t classes,
                   cudaStream_t stream) {
  bias_gradient_kernel<<<blocks_for(classes, kThreads), kThreads, 0, stream>>>(dlogits, dbias, n,
                                                                               classes);
  STOKER_GPU_LAUNCHED("bias_gradient");
}

}  // namespace stoker::gpu
