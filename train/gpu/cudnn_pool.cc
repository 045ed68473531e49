// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/cudnn_pool.h"

#include "common/error.h"
#include "train/gpu/conv_cudnn.h"
#include "train/gpu/cuda_check.h"

namespace stoker::gpu {

std::shared_ptr<const PoolPlan> plan_pool(const PoolShape& s) {
  auto p = std::make_shared<PoolPlan>();
  p->shape = s;
  p->x = make_tensor_desc(s.dtype, s.nhwc, s.n, s.c, s.h, s.w);
  p->y = make_tensor_desc(s.dtype, s.nhwc, s.n, s.c, s.oh, s.ow);
  cudnnPoolingDescriptor_t d = nullptr;
  STOKER_GPU(cudnnCreatePoolingDescriptor(&d));
  p->pool.reset(d);
  if (s.max) {
    STOKER_GPU(cudnnSetPooling2dDescriptor(d, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, int(s.k),
                                           int(s.k), int(s.pad), int(s.pad), int(s.stride),
                                           int(s.stride)));
    p->max = MaxPoolShape{s.n, s.c, s.h, s.w, s.oh, s.ow, s.k, s.stride, s.pad};
    p->offsets_bytes = maxpool_offsets_bytes(p->max);
  } else {
    STOKER_GPU(cudnnSetPooling2dDescriptor(d, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                                           CUDNN_PROPAGATE_NAN, int(s.h), int(s.w), 0, 0, int(s.h),
                                           int(s.w)));
  }
  return p;
}

namespace {

void pool_forward(const GpuExec& e, const PoolPlan& p, const void* x, void* y) {
  STOKER_GPU(cudnnPoolingForward(e.cudnn, p.pool.get(), &kOne, p.x.get(), x, &kZero, p.y.get(), y));
}

}  // namespace

void maxpool2d_forward(const GpuExec& e, const PoolPlan& p, const void* x, void* y) {
  STOKER_CHECK(p.shape.max);
  pool_forward(e, p, x, y);
}

void maxpool2d_backward(const GpuExec& e, const PoolPlan& p, const void* x, const void* dy,
                        void* dx, void* offsets, bool accumulate) {
  STOKER_CHECK(p.shape.max);
  maxpool_backward(p.shape.dtype, p.shape.nhwc, p.max, x, dy, dx, offsets, accumulate, e.stream);
}

void global_avgpool_forward(const GpuExec& e, const PoolPlan& p, const void* x, void* y) {
  STOKER_CHECK(!p.shape.max);
  pool_forward(e, p, x, y);
}

void global_avgpool_backward(const GpuExec& e, const PoolPlan& p, const void* x, const void* y,
                             const void* dy, void* dx, float beta) {
  STOKER_CHECK(!p.shape.max);
  STOKER_GPU(cudnnPoolingBackward(e.cudnn, p.pool.get(), &kOne, p.y.get(), y, p.y.get(), dy,
                                  p.x.get(), x, &beta, p.x.get(), dx));
}

}  // namespace stoker::gpu
