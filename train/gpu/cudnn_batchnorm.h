// SPDX-License-Identifier: Apache-2.0
// A batch norm on cuDNN, planned and executed: the plan (its input's descriptor, the derived
// statistics descriptor, which of the Ex forms cuDNN offers for the shape, with their workspace
// and reserve space) built once per BnShape (op_shapes.h: the backend's PlanCache shares one
// plan between the layers of a shape), then the forward in training and in eval and the
// backward, named as train/reference/batchnorm.h's. The Ex forms are cuDNN's NHWC persistent
// kernels (cudnnBatchNormalization*Ex), which the plain calls do not reach: with the plain calls
// an NHWC batch norm runs the legacy single-read kernels, 89% of a ResNet-50 step on the first
// H200 run.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <memory>

#include "train/gpu/cudnn_common.h"
#include "train/gpu/handles.h"
#include "train/gpu/op_shapes.h"

namespace stoker::gpu {

// How a batch norm runs in training (eval always runs cuDNN's inference call, then the add and
// ReLU kernels).
enum class BnCall {
  plain,    // cudnnBatchNormalizationForwardTraining / Backward
  ex,       // the Ex calls, CUDNN_BATCHNORM_OPS_BN
  relu,     // the Ex calls, OPS_BN_ACTIVATION: the ReLU that only it feeds runs inside
  add_relu  // the Ex calls, OPS_BN_ADD_ACTIVATION: y = relu(bn(x) + z), a block's last BN with
            // the residual add and the ReLU after it (MLPerf's ResNet): the lowering's bn_add_relu
};

struct BnPlan {
  TensorDesc x;   // n x c x h x w: x, y, z and their gradients
  TensorDesc bn;  // 1 x c x 1 x 1: scale, bias, the running and saved statistics (f32)
  cudnnBatchNormMode_t mode = CUDNN_BATCHNORM_SPATIAL;
  ActivationDesc relu;  // the Ex forms' ReLU
  // What cuDNN offers these shapes (shape.ex; a refusal only means that form is not used), the
  // workspace and the reserve space of the largest.
  bool offers_ex = false, offers_relu = false, offers_add_relu = false;
  size_t workspace = 0, reserve = 0;
};
std::shared_ptr<const BnPlan> plan_batchnorm(cudnnHandle_t handle, const BnShape& shape);

// A batch norm's buffers: x, z, y (and their gradients) n x c x h x w in the plan's dtype and
// layout; the rest c floats. `reserve`: the layer's own, at least plan.reserve bytes (the Ex
// forms keep what their backward reads there; the plain calls take none).
struct BnBuffers {
  const void* x = nullptr;
  const void* z = nullptr;  // add_relu: the shortcut
  void* y = nullptr;        // relu, add_relu: the ReLU's output
  const float* gamma = nullptr;
  const float* beta = nullptr;
  float* running_mean = nullptr;
  float* running_var = nullptr;
  float* save_mean = nullptr;  // the batch's, for the backward
  float* save_invvar = nullptr;
  void* reserve = nullptr;
  size_t reserve_bytes = 0;
};

// Training: y = bn(x), relu(bn(x)) (the ReLU's output: the same memory as bn's under in-place
// ReLU) or relu(bn(x) + z), by `call`, with the batch statistics and the running statistics'
// update (torch's momentum, unbiased variance).
void batchnorm_forward_train(const GpuExec& e, const BnPlan& p, BnCall call, const BnBuffers& b,
                             double eps, double momentum);
// Eval: y = bn(x) with the running statistics (cuDNN's inference call).
void batchnorm_forward_infer(const GpuExec& e, const BnPlan& p, const BnBuffers& b, double eps);

// The gradients: dx (+)= by `beta_dx`; dgamma, dbeta written (f32, c). The fused calls take y
// and dy at the ReLU's output and apply the ReLU's gradient; add_relu also writes dz.
struct BnGradients {
  const void* dy = nullptr;
  void* dx = nullptr;
  void* dz = nullptr;  // add_relu
  float* dgamma = nullptr;
  float* dbeta = nullptr;
};
void batchnorm_backward(const GpuExec& e, const BnPlan& p, BnCall call, const BnBuffers& b,
                        const BnGradients& d, float beta_dx, double eps);

}  // namespace stoker::gpu
