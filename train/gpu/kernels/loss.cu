// SPDX-License-Identifier: Apache-2.0
// Softmax cross-entropy with label smoothing, forward and backward in one pass per sample
// (one block per row), then the mean over the batch in row order (deterministic).
#include <cfloat>

#include "train/gpu/cuda_check.h"
#include "train/gpu/kernels/dtype.cuh"

namespace stoker::gpu {
namespace {

constexpr int kThreads = 256;

// Every thread gets op over the block's values; `identity` pads the partial-warp tail.
template <class Op>
__device__ float block_reduce(float v, Op op, float identity, float* shared) {
  for (int o = 16; o > 0; o /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x / 32) ? shared[lane] : identity;
    for (int o = 16; o > 0; o /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) shared[32] = v;
  }
  __syncthreads();
  const float out = shared[32];
  __syncthreads();  // shared is reused by the next reduction
  return out;
}

template <class T>
__global__ void loss_rows(LossArgs a, T* dlow) {
  __shared__ float shared[33];
  const int64_t row = blockIdx.x;
  const float* z = a.logits + row * a.classes;
  const int32_t label = a.labels[row];
  float m = -FLT_MAX;
  for (int64_t j = threadIdx.x; j < a.classes; j += blockDim.x) m = fmaxf(m, z[j]);
  const auto larger = [](float x, float y) { return fmaxf(x, y); };
  m = block_reduce(m, larger, -FLT_MAX, shared);
  float sum = 0, zsum = 0;
  for (int64_t j = threadIdx.x; j < a.classes; j += blockDim.x) {
    sum += expf(z[j] - m);
    zsum += z[j];
  }
  const auto plus = [](float x, float y) { return x + y; };
  sum = block_reduce(sum, plus, 0.0f, shared);
  zsum = block_reduce(zsum, plus, 0.0f, shared);
  const float lse = m + logf(sum);
  const float s = a.smoothing, c = float(a.classes);
  if (threadIdx.x == 0) a.per_sample[row] = (1.0f - s) * (lse - z[label]) + s * (lse - zsum / c);
  const float scale = (a.scale ? a.scale->scale : 1.0f) / float(a.n);
  for (int64_t j = threadIdx.x; j < a.classes; j += blockDim.x) {
    const float target = (j == label ? 1.0f - s : 0.0f) + s / c;
    const float g = (expf(z[j] - lse) - target) * scale;
    a.dlogits[row * a.classes + j] = g;
    if (dlow) store_f(dlow, row * a.classes + j, g);
  }
}

__global__ void loss_mean(const float* per_sample, int64_t n, float* loss) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += per_sample[i];
  *loss = s / float(n);
}

}  // namespace

void softmax_cross_entropy(const LossArgs& a, cudaStream_t stream) {
  with_dtype(a.lowp, [&](auto v) {
    using T = decltype(v);
    loss_rows<<<unsigned(a.n), kThreads, 0, stream>>>(a, static_cast<T*>(a.dlogits_lowp));
  });
  STOKER_GPU_LAUNCHED("softmax_cross_entropy rows");
  loss_mean<<<1, 1, 0, stream>>>(a.per_sample, a.n, a.loss);
  STOKER_GPU_LAUNCHED("softmax_cross_entropy mean");
}

}  // namespace stoker::gpu
