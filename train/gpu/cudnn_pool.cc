// SPDX-License-Identifier: Apache-2.0
// CudnnNet's pooling: cuDNN's max and average pooling forward, average pooling's backward,
// and our max pooling backward (no atomics).
#include "train/gpu/cudnn_net.h"

#include "train/gpu/cuda_check.h"
#include "train/gpu/cudnn_common.h"

namespace stoker::gpu {

void CudnnNet::plan_pool(const Layer& l, GpuLayer& g) {
  const int64_t n = config_.batch;
  const ActShape& in = shapes_[size_t(l.inputs[0])];
  const ActShape& out = shapes_[size_t(l.output)];
  cudnnPoolingDescriptor_t d = nullptr;
  STOKER_GPU(cudnnCreatePoolingDescriptor(&d));
  g.pool.reset(d);
  if (l.kind == LayerKind::maxpool) {
    STOKER_GPU(cudnnSetPooling2dDescriptor(d, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, l.kernel,
                                           l.kernel, l.padding, l.padding, l.stride, l.stride));
    g.pool_shape = MaxPoolShape{n, in.c, in.h, in.w, out.h, out.w, l.kernel, l.stride, l.padding};
    alloc(g.pool_offsets, maxpool_offsets_bytes(g.pool_shape));
  } else
    STOKER_GPU(cudnnSetPooling2dDescriptor(d, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                                           CUDNN_PROPAGATE_NAN, int(in.h), int(in.w), 0, 0,
                                           int(in.h), int(in.w)));
}

void CudnnNet::forward_pool(const Layer& l, GpuLayer& g) {
  const GpuTensor& x = tensors_[size_t(l.inputs[0])];
  GpuTensor& y = tensors_[size_t(l.output)];
  STOKER_GPU(cudnnPoolingForward(cudnn_, g.pool.get(), &kOne, x.desc.get(), x.act, &kZero,
                                 y.desc.get(), y.act));
}

void CudnnNet::backward_pool(const Layer& l, GpuLayer& g, float beta) {
  const GpuTensor& x = tensors_[size_t(l.inputs[0])];
  const GpuTensor& y = tensors_[size_t(l.output)];
  if (l.kind == LayerKind::maxpool) {
    // Not cuDNN's: its max-pool backward adds with atomics (not reproducible).
    maxpool_backward(dtype_, nhwc_, g.pool_shape, x.act, y.dact, x.dact, g.pool_offsets.get(),
                     beta != 0.0f, stream_);
    return;
  }
  STOKER_GPU(cudnnPoolingBackward(cudnn_, g.pool.get(), &kOne, y.desc.get(), y.act, y.desc.get(),
                                  y.dact, x.desc.get(), x.act, &beta, x.desc.get(), x.dact));
}

}  // namespace stoker::gpu
