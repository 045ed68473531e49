// SPDX-License-Identifier: Apache-2.0
// Launchers of Stoker's own CUDA kernels, for what no cuDNN or cuBLAS call fits: the input
// conversion (u8/f32, NCHW/NHWC -> normalised compute dtype and layout), elementwise ReLU and
// residual add, max pooling's backward (deterministic), the FC bias, the softmax cross-entropy with
// label smoothing (forward and backward in one pass), and the multi-tensor optimiser kernels
// (gradient finish: cast, unscale, overflow check; SGD with the weights' low-precision copies
// written in the same pass; the loss scale's state machine). Plain C++ declarations: callable from
// .cc files. Every launcher only enqueues on `stream` and checks the launch (STOKER_GPU_LAUNCHED).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/dtype.h"
#include "train/gpu/step_math.h"

namespace stoker::gpu {

// Images [n, 3, h, w] (or [n, h, w, 3] when src_nhwc), u8 (normalised here: (x / 255 - mean)
// / std) or f32 (copied as is) -> dst in `dtype`, NHWC when dst_nhwc.
struct InputConversion {
  bool src_u8 = false, src_nhwc = false, dst_nhwc = false;
  DType dtype = DType::f32;
  int64_t n = 0, h = 0, w = 0;
  float mean[3] = {0, 0, 0};
  float inv_std[3] = {1, 1, 1};
};
void convert_input(const InputConversion& c, const void* src, void* dst, cudaStream_t stream);

// y = max(x, 0), NaN kept (may be in place); dx = y <= 0 ? 0 : dy, added to dx when
// accumulate (step_math.h: relu_value, relu_gradient, torch's semantics).
void relu_forward(DType t, const void* x, void* y, int64_t n, cudaStream_t stream);
void relu_backward(DType t, const void* y, const void* dy, void* dx, int64_t n, bool accumulate,
                   cudaStream_t stream);
// y = a + b; dst (+)= src (a gradient passed through an add).
void add_forward(DType t, const void* a, const void* b, void* y, int64_t n, cudaStream_t stream);
void pass_gradient(DType t, const void* src, void* dst, int64_t n, bool accumulate,
                   cudaStream_t stream);

// Max pooling's gradient, deterministic (kernels/pool.cu: cuDNN's is not): dx (+)= for each
// input element, the sum of dy over the windows whose maximum it is (first maximum in scan
// order; NaN wins, as torch). x is the pool's input, all in `t` and NCHW or NHWC.
struct MaxPoolShape {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t oh = 0, ow = 0;              // output
  int64_t k = 1, stride = 1, pad = 0;  // square window
};
// `offsets`: scratch of maxpool_offsets_bytes(s) bytes (each output's maximum, in its window).
size_t maxpool_offsets_bytes(const MaxPoolShape& s);
void maxpool_backward(DType t, bool nhwc, const MaxPoolShape& s, const void* x, const void* dy,
                      void* dx, void* offsets, bool accumulate, cudaStream_t stream);

// logits [n, classes] f32 += bias; dbias[c] = sum over rows of dlogits (f32), in row order.
void add_bias(float* logits, const float* bias, int64_t n, int64_t classes, cudaStream_t stream);
void bias_gradient(const float* dlogits, float* dbias, int64_t n, int64_t classes,
                   cudaStream_t stream);

// Mean softmax cross-entropy with label smoothing of logits [n, classes] f32 against labels;
// writes *loss (unscaled) and dlogits = scale * d(loss)/d(logits) in f32 and, when
// dlogits_lowp is not null, in `lowp` as well. `scale` is the loss scale in device memory
// (null: 1). `per_sample` holds n floats of scratch. Labels are checked on the host.
struct LossArgs {
  const float* logits = nullptr;
  const int32_t* labels = nullptr;
  int64_t n = 0, classes = 0;
  float smoothing = 0;
  const LossScale* scale = nullptr;
  float* loss = nullptr;
  float* per_sample = nullptr;
  float* dlogits = nullptr;
  void* dlogits_lowp = nullptr;
  DType lowp = DType::f32;
};
void softmax_cross_entropy(const LossArgs& a, cudaStream_t stream);

// An empty one-thread kernel whose CUPTI record marks the start of a step
// (cupti_records.h: kStepMarkerName).
void step_marker(cudaStream_t stream);

// One trainable tensor as the multi-tensor kernels see it (lives in device memory).
struct TensorSlot {
  float* value = nullptr;     // f32 master, torch's plain layout
  float* grad = nullptr;      // f32 gradient, plain, unscaled
  float* momentum = nullptr;  // f32 momentum buffer, plain
  void* raw = nullptr;      // the library's gradient (compute dtype/layout); == grad when f32 plain
  void* compute = nullptr;  // the low-precision / NHWC copy the layers read; null when none
  int64_t n = 0;
  DType raw_dtype = DType::f32;
  DType compute_dtype = DType::f32;
  int32_t krsc = 0;  // raw/compute are K x R x S x C (cuDNN's NHWC filter) of plain K x C x R x S
  int32_t k = 0, c = 0, rs = 0;
  int32_t decay_exempt = 0;  // 1-D (BN parameters, biases): decay only if decay_bn_and_bias
  int32_t has_momentum = 0;
};
// A range of one tensor's elements: the unit of work of one block.
struct TensorChunk {
  int32_t slot = 0;
  int64_t begin = 0, end = 0;
};

// grad = float(raw) * (1 / scale) (cast and KRSC -> KCRS where the slot says), for every
// chunk; sets *overflow to 1 when any result is not finite (overflow null: no check, the
// step applies whatever it holds; gpu_policy.h's skips_nonfinite_step). `scale` null: 1.
void finish_gradients(const TensorSlot* slots, const TensorChunk* chunks, int64_t chunk_count,
                      const LossScale* scale, int32_t* overflow, cudaStream_t stream);
// One SGD step (step_math.h) on every chunk unless *overflow, then writes the compute copies.
// With update == false only writes the compute copies from the masters (after a load).
void sgd_and_cast(const TensorSlot* slots, const TensorChunk* chunks, int64_t chunk_count,
                  const SgdHyper* hyper, const int32_t* overflow, bool update, cudaStream_t stream);
// After sgd_and_cast: marks momentum buffers as started (unless skipped), steps the loss
// scale when `dynamic` (f16), and records whether the step was skipped in *skipped.
void finish_step(TensorSlot* slots, int32_t slot_count, const SgdHyper* hyper,
                 const int32_t* overflow, LossScale* scale, bool dynamic, int32_t* skipped,
                 cudaStream_t stream);

}  // namespace stoker::gpu
