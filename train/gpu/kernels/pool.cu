// SPDX-License-Identifier: Apache-2.0
// Max-pool backward without atomics. cuDNN's cudnnPoolingBackward with CUDNN_POOLING_MAX is on
// cuDNN's list of routines that do not guarantee reproducibility (atomic adds where windows
// overlap, as ResNet's 3x3 stride-2 stem pool does), so the same step could give different
// gradient bits. Here each input element gathers, in a fixed order, the gradients of the
// windows whose maximum it is (step_math.h: pool_input_gradient, which the host tests run
// too): the same bits every time. The forward stays cuDNN's.
#include "train/gpu/cuda_check.h"
#include "train/gpu/kernels/dtype.cuh"

namespace stoker::gpu {
namespace {

constexpr int kThreads = 256;

// Reads one (image, channel) plane of a tensor stored NCHW or NHWC.
template <class T>
struct Plane {
  const T* base;  // the tensor
  int64_t img, ch, c, h, w;
  bool nhwc;
  __device__ __forceinline__ float operator()(int64_t row, int64_t col) const {
    const int64_t i =
        nhwc ? ((img * h + row) * w + col) * c + ch : ((img * c + ch) * h + row) * w + col;
    return load_f(base, i);
  }
};

template <class T>
__global__ void maxpool_backward_kernel(MaxPoolShape s, bool nhwc, const T* x, const T* dy, T* dx,
                                        bool acc) {
  const int64_t total = s.n * s.c * s.h * s.w;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    // i indexes dx in its storage layout.
    int64_t img, ch, row, col;
    if (nhwc) {
      ch = i % s.c, col = (i / s.c) % s.w, row = (i / (s.c * s.w)) % s.h;
      img = i / (s.c * s.w * s.h);
    } else {
      col = i % s.w, row = (i / s.w) % s.h, ch = (i / (s.w * s.h)) % s.c;
      img = i / (s.w * s.h * s.c);
    }
    const Plane<T> in{x, img, ch, s.c, s.h, s.w, nhwc};
    const Plane<T> grad{dy, img, ch, s.c, s.oh, s.ow, nhwc};
    const float g =
        pool_input_gradient(in, grad, s.h, s.w, s.oh, s.ow, s.k, s.stride, s.pad, row, col);
    store_f(dx, i, acc ? load_f(dx, i) + g : g);
  }
}

}  // namespace

void maxpool_backward(DType t, bool nhwc, const MaxPoolShape& s, const void* x, const void* dy,
                      void* dx, bool accumulate, cudaStream_t stream) {
  const int64_t total = s.n * s.c * s.h * s.w;
  with_dtype(t, [&](auto v) {
    using T = decltype(v);
    maxpool_backward_kernel<<<blocks_for(total, kThreads), kThreads, 0, stream>>>(
        s, nhwc, static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx),
        accumulate);
  });
  STOKER_GPU_LAUNCHED("maxpool_backward");
}

}  // namespace stoker::gpu
