// SPDX-License-Identifier: Apache-2.0
// Max-pool backward without atomics. cuDNN's cudnnPoolingBackward with CUDNN_POOLING_MAX is on
// cuDNN's list of routines that do not guarantee reproducibility (atomic adds where windows
// overlap, as ResNet's 3x3 stride-2 stem pool does), so the same step could give different
// gradient bits. Here each input element gathers, in a fixed order, the gradients of the
// windows whose maximum it is: the same bits every time. Two passes, so that no window is
// scanned more than once: each output's maximum is found and stored as a one-byte offset in
// its window (step_math.h: pool_window_offset), then each input element compares its own
// offset in the (at most 4 for the stem pool) windows that hold it (pool_input_gradient_stored;
// the host tests check both against the scatter they replace). The first H200 run measured the
// one-pass form, which rescanned up to 4 windows of 9 per input element, at 15.5 ms a step for
// ResNet-50 at batch 256; the second, this form with 64-bit window arithmetic, at 5.3 ms
// (gather 4.1, offsets 1.2): bound by integer division, not memory. Since then every index is
// 32-bit where the tensor allows (not yet run on a GPU).
// The forward stays cuDNN's.
#include "common/error.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/kernels/dtype.cuh"
#include "train/gpu/step_math.h"

namespace stoker::gpu {
namespace {

constexpr int kThreads = 256;

// Element i of an n x c x h x w tensor stored NCHW or NHWC: its image, channel, row, column.
// I is int32_t where the tensor has fewer than 2^31 elements (64-bit division is slow).
template <class I>
struct Coord {
  I img, ch, row, col;
};
template <class I>
__device__ __forceinline__ Coord<I> coord_of(I i, bool nhwc, I c, I h, I w) {
  if (nhwc) return {I(i / (c * w * h)), I(i % c), I((i / (c * w)) % h), I((i / c) % w)};
  return {I(i / (w * h * c)), I((i / (w * h)) % c), I((i / w) % h), I(i % w)};
}
template <class I>
__device__ __forceinline__ I index_of(Coord<I> p, bool nhwc, I c, I h, I w) {
  return nhwc ? ((p.img * h + p.row) * w + p.col) * c + p.ch
              : ((p.img * c + p.ch) * h + p.row) * w + p.col;
}

template <class T, class I>
__global__ void maxpool_offsets_kernel(MaxPoolShape s, bool nhwc, const T* x, uint8_t* offsets) {
  const I total = I(s.n * s.c * s.oh * s.ow);
  const I c = I(s.c), h = I(s.h), w = I(s.w), oh = I(s.oh), ow = I(s.ow);
  const I k = I(s.k), stride = I(s.stride), pad = I(s.pad);
  const I step = I(gridDim.x) * I(blockDim.x);  // in I: an unsigned stride would wrap i
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < total; i += step) {
    const Coord<I> o = coord_of<I>(i, nhwc, c, oh, ow);
    const auto read = [&](I r, I col) {
      return load_f(x, index_of<I>({o.img, o.ch, r, col}, nhwc, c, h, w));
    };
    const I off = pool_window_offset(read, h, w, k, stride, pad, o.row, o.col);
    offsets[i] = uint8_t(off < 0 ? 0xFF : off);
  }
}

template <class T, class I>
__global__ void maxpool_gather_kernel(MaxPoolShape s, bool nhwc, const uint8_t* offsets,
                                      const T* dy, T* dx, bool acc) {
  const I total = I(s.n * s.c * s.h * s.w);
  const I c = I(s.c), h = I(s.h), w = I(s.w), oh = I(s.oh), ow = I(s.ow);
  const I k = I(s.k), stride = I(s.stride), pad = I(s.pad);
  const I step = I(gridDim.x) * I(blockDim.x);
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < total; i += step) {
    const Coord<I> p = coord_of<I>(i, nhwc, c, h, w);  // i indexes dx in its storage layout
    const auto at = [&](I r, I col) { return index_of<I>({p.img, p.ch, r, col}, nhwc, c, oh, ow); };
    const auto offset = [&](I r, I col) {
      const uint8_t v = offsets[at(r, col)];
      return v == 0xFF ? I(-1) : I(v);
    };
    const auto grad = [&](I r, I col) { return load_f(dy, at(r, col)); };
    const float g = pool_input_gradient_stored(offset, grad, oh, ow, k, stride, pad, p.row, p.col);
    store_f(dx, i, acc ? load_f(dx, i) + g : g);
  }
}

template <class T, class I>
void launch(const MaxPoolShape& s, bool nhwc, const T* x, const T* dy, T* dx, uint8_t* offsets,
            bool accumulate, cudaStream_t stream) {
  const int64_t outputs = s.n * s.c * s.oh * s.ow, inputs = s.n * s.c * s.h * s.w;
  maxpool_offsets_kernel<T, I>
      <<<blocks_for(outputs, kThreads), kThreads, 0, stream>>>(s, nhwc, x, offsets);
  STOKER_GPU_LAUNCHED("maxpool_backward (offsets)");
  maxpool_gather_kernel<T, I>
      <<<blocks_for(inputs, kThreads), kThreads, 0, stream>>>(s, nhwc, offsets, dy, dx, accumulate);
  STOKER_GPU_LAUNCHED("maxpool_backward (gather)");
}

}  // namespace

size_t maxpool_offsets_bytes(const MaxPoolShape& s) {
  STOKER_CHECK(s.k * s.k < 0xFF);  // an offset in the window fits a byte, 0xFF is "none"
  return size_t(s.n * s.c * s.oh * s.ow);
}

void maxpool_backward(DType t, bool nhwc, const MaxPoolShape& s, const void* x, const void* dy,
                      void* dx, void* offsets, bool accumulate, cudaStream_t stream) {
  // int32 where both kernels' loops stay below 2^31, their grid strides included.
  const int64_t outputs = s.n * s.c * s.oh * s.ow, inputs = s.n * s.c * s.h * s.w;
  const bool small =
      grid_stride_fits_int32(inputs, int64_t(blocks_for(inputs, kThreads)) * kThreads) &&
      grid_stride_fits_int32(outputs, int64_t(blocks_for(outputs, kThreads)) * kThreads);
  with_dtype(t, [&](auto v) {
    using T = decltype(v);
    const auto* xt = static_cast<const T*>(x);
    const auto* dyt = static_cast<const T*>(dy);
    auto* dxt = static_cast<T*>(dx);
    auto* o = static_cast<uint8_t*>(offsets);
    if (small)
      launch<T, int32_t>(s, nhwc, xt, dyt, dxt, o, accumulate, stream);
    else
      launch<T, int64_t>(s, nhwc, xt, dyt, dxt, o, accumulate, stream);
  });
}

}  // namespace stoker::gpu
