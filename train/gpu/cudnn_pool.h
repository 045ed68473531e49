// SPDX-License-Identifier: Apache-2.0
// Pooling on the GPU, planned and executed: the plan (cuDNN's pooling descriptor, the input's
// and output's descriptors, our max-pool backward's shape and scratch size) built once per
// PoolShape (op_shapes.h; the backend's PlanCache), then the forwards (cuDNN's), average
// pooling's backward (cuDNN's) and max pooling's (ours: cuDNN's adds with atomics, which is not
// reproducible), named as train/reference/pool.h's.
#pragma once

#include <cstddef>
#include <memory>

#include "train/gpu/cudnn_common.h"
#include "train/gpu/handles.h"
#include "train/gpu/op_shapes.h"

namespace stoker::gpu {

struct PoolPlan {
  PoolDesc pool;
  TensorDesc x, y;  // n x c x h x w, n x c x oh x ow
  PoolShape shape;
  MaxPoolShape max;          // shape.max: our backward's
  size_t offsets_bytes = 0;  // shape.max: its scratch (maxpool_offsets_bytes)
};
std::shared_ptr<const PoolPlan> plan_pool(const PoolShape& shape);

// y = the window maxima (N x C x OH x OW) of x (N x C x H x W).
void maxpool2d_forward(const GpuExec& e, const PoolPlan& p, const void* x, void* y);
// dx (+)= (accumulate) for each input element the sum of dy over the windows whose maximum it
// is; `offsets`: the layer's scratch of p.offsets_bytes.
void maxpool2d_backward(const GpuExec& e, const PoolPlan& p, const void* x, const void* dy,
                        void* dx, void* offsets, bool accumulate);
// y = the mean over H x W (N x C x 1 x 1) of x; dx (+)= by `beta` dy / (H W) everywhere.
void global_avgpool_forward(const GpuExec& e, const PoolPlan& p, const void* x, void* y);
void global_avgpool_backward(const GpuExec& e, const PoolPlan& p, const void* x, const void* y,
                             const void* dy, void* dx, float beta);

}  // namespace stoker::gpu
