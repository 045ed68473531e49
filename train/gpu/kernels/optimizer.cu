// SPDX-License-Identifier: Apache-2.0
// The multi-tensor optimiser kernels: one block per chunk of one tensor (chunks planned once,
// in device memory), so one launch covers every parameter of the network.
#include "train/gpu/cuda_check.h"
#include "train/gpu/kernels/dtype.cuh"

namespace stoker::gpu {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float load_any(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::f16:
      return load_f(static_cast<const __half*>(p), i);
    case DType::bf16:
      return load_f(static_cast<const __nv_bfloat16*>(p), i);
    default:
      return load_f(static_cast<const float*>(p), i);
  }
}
__device__ __forceinline__ void store_any(void* p, DType t, int64_t i, float v) {
  switch (t) {
    case DType::f16:
      store_f(static_cast<__half*>(p), i, v);
      break;
    case DType::bf16:
      store_f(static_cast<__nv_bfloat16*>(p), i, v);
      break;
    default:
      store_f(static_cast<float*>(p), i, v);
      break;
  }
}

__global__ void finish_kernel(const TensorSlot* slots, const TensorChunk* chunks,
                              const LossScale* scale, int32_t* overflow) {
  const TensorChunk ch = chunks[blockIdx.x];
  const TensorSlot s = slots[ch.slot];
  const float inv = scale ? 1.0f / scale->scale : 1.0f;
  bool bad = false;
  for (int64_t i = ch.begin + threadIdx.x; i < ch.end; i += blockDim.x) {
    const int64_t j = s.krsc ? krsc_index(i, s.c, s.rs) : i;
    const float g = load_any(s.raw, s.raw_dtype, j) * inv;
    bad |= !isfinite(g);
    s.grad[i] = g;
  }
  // Uniform across the block (a kernel argument): every thread reaches the barrier or none.
  if (overflow != nullptr && __syncthreads_or(bad) && threadIdx.x == 0) atomicOr(overflow, 1);
}

__global__ void sgd_kernel(const TensorSlot* slots, const TensorChunk* chunks,
                           const SgdHyper* hyper, const int32_t* overflow, bool update) {
  if (update && overflow && *overflow) return;  // f16: the step is skipped
  const TensorChunk ch = chunks[blockIdx.x];
  const TensorSlot s = slots[ch.slot];
  const SgdHyper h = *hyper;
  const float wd = (s.decay_exempt && !h.decay_bn_and_bias) ? 0.0f : h.weight_decay;
  const bool first = !s.has_momentum;
  for (int64_t i = ch.begin + threadIdx.x; i < ch.end; i += blockDim.x) {
    float v = s.value[i];
    if (update) {
      v = sgd_element(v, s.grad[i], &s.momentum[i], first, wd, h);
      s.value[i] = v;
    }
    if (s.compute) store_any(s.compute, s.compute_dtype, s.krsc ? krsc_index(i, s.c, s.rs) : i, v);
  }
}

__global__ void finish_step_kernel(TensorSlot* slots, int32_t count, const SgdHyper* hyper,
                                   const int32_t* overflow, LossScale* scale, bool dynamic,
                                   int32_t* skipped) {
  const bool over = *overflow != 0;
  if (threadIdx.x == 0) {
    *skipped = over ? 1 : 0;
    if (dynamic) loss_scale_after_step(*scale, over);
  }
  if (over || hyper->momentum == 0.0f) return;
  for (int32_t i = threadIdx.x; i < count; i += blockDim.x) slots[i].has_momentum = 1;
}

}  // namespace

void finish_gradients(const TensorSlot* slots, const TensorChunk* chunks, int64_t chunk_count,
                      const LossScale* scale, int32_t* overflow, cudaStream_t stream) {
  if (chunk_count == 0) return;
  finish_kernel<<<unsigned(chunk_count), kThreads, 0, stream>>>(slots, chunks, scale, overflow);
  STOKER_GPU_LAUNCHED("finish_gradients");
}

void sgd_and_cast(const TensorSlot* slots, const TensorChunk* chunks, int64_t chunk_count,
                  const SgdHyper* hyper, const int32_t* overflow, bool update,
                  cudaStream_t stream) {
  if (chunk_count == 0) return;
  sgd_kernel<<<unsigned(chunk_count), kThreads, 0, stream>>>(slots, chunks, hyper, overflow,
                                                             update);
  STOKER_GPU_LAUNCHED("sgd_and_cast");
}

void finish_step(TensorSlot* slots, int32_t slot_count, const SgdHyper* hyper,
                 const int32_t* overflow, LossScale* scale, bool dynamic, int32_t* skipped,
                 cudaStream_t stream) {
  finish_step_kernel<<<1, kThreads, 0, stream>>>(slots, slot_count, hyper, overflow, scale, dynamic,
                                                 skipped);
  STOKER_GPU_LAUNCHED("finish_step");
}

}  // namespace stoker::gpu
