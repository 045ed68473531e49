// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/cudnn_batchnorm.h"

#include <algorithm>

#include "train/gpu/conv_cudnn.h"
#include "train/gpu/cuda_check.h"

namespace stoker::gpu {

namespace {

cudnnBatchNormOps_t bn_ops(BnCall c) {
  switch (c) {
    case BnCall::relu:
      return CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
    case BnCall::add_relu:
      return CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
    default:
      return CUDNN_BATCHNORM_OPS_BN;
  }
}

// Whether cuDNN sizes the Ex form `ops` for the plan's shapes, raising its workspace and reserve
// space to that form's.
bool offers(cudnnHandle_t handle, BnPlan& p, cudnnBatchNormOps_t ops) {
  const bool add = ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
  const cudnnTensorDescriptor_t x = p.x.get();
  const cudnnActivationDescriptor_t act = ops == CUDNN_BATCHNORM_OPS_BN ? nullptr : p.relu.get();
  size_t fwd = 0, bwd = 0, res = 0;
  if (cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(handle, p.mode, ops, x,
                                                               add ? x : nullptr, x, p.bn.get(),
                                                               act, &fwd) != CUDNN_STATUS_SUCCESS ||
      cudnnGetBatchNormalizationBackwardExWorkspaceSize(handle, p.mode, ops, x, x, x,
                                                        add ? x : nullptr, x, p.bn.get(), act,
                                                        &bwd) != CUDNN_STATUS_SUCCESS ||
      cudnnGetBatchNormalizationTrainingExReserveSpaceSize(handle, p.mode, ops, act, x, &res) !=
          CUDNN_STATUS_SUCCESS)
    return false;
  p.workspace = std::max({p.workspace, fwd, bwd});
  p.reserve = std::max(p.reserve, res);
  return true;
}

}  // namespace

std::shared_ptr<const BnPlan> plan_batchnorm(cudnnHandle_t handle, const BnShape& s) {
  auto p = std::make_shared<BnPlan>();
  p->x = make_tensor_desc(s.dtype, s.nhwc, s.n, s.c, s.h, s.w);
  p->mode = s.persistent ? CUDNN_BATCHNORM_SPATIAL_PERSISTENT : CUDNN_BATCHNORM_SPATIAL;
  cudnnTensorDescriptor_t d = nullptr;
  STOKER_GPU(cudnnCreateTensorDescriptor(&d));
  p->bn.reset(d);
  STOKER_GPU(cudnnDeriveBNTensorDescriptor(d, p->x.get(), p->mode));
  cudnnActivationDescriptor_t act = nullptr;
  STOKER_GPU(cudnnCreateActivationDescriptor(&act));
  p->relu.reset(act);
  STOKER_GPU(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  if (!s.ex) return p;
  p->offers_ex = offers(handle, *p, CUDNN_BATCHNORM_OPS_BN);
  p->offers_relu = p->offers_ex && offers(handle, *p, CUDNN_BATCHNORM_OPS_BN_ACTIVATION);
  p->offers_add_relu = p->offers_ex && offers(handle, *p, CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION);
  return p;
}

void batchnorm_forward_train(const GpuExec& e, const BnPlan& p, BnCall call, const BnBuffers& b,
                             double eps, double momentum) {
  const cudnnTensorDescriptor_t x = p.x.get();
  if (call == BnCall::plain) {
    STOKER_GPU(cudnnBatchNormalizationForwardTraining(
        e.cudnn, p.mode, &kOne, &kZero, x, b.x, x, b.y, p.bn.get(), b.gamma, b.beta, momentum,
        b.running_mean, b.running_var, eps, b.save_mean, b.save_invvar));
    return;
  }
  const cudnnBatchNormOps_t ops = bn_ops(call);
  const bool add = call == BnCall::add_relu;
  STOKER_GPU(cudnnBatchNormalizationForwardTrainingEx(
      e.cudnn, p.mode, ops, &kOne, &kZero, x, b.x, add ? x : nullptr, add ? b.z : nullptr, x, b.y,
      p.bn.get(), b.gamma, b.beta, momentum, b.running_mean, b.running_var, eps, b.save_mean,
      b.save_invvar, ops == CUDNN_BATCHNORM_OPS_BN ? nullptr : p.relu.get(), e.workspace,
      e.workspace_bytes, b.reserve, b.reserve_bytes));
}

void batchnorm_forward_infer(const GpuExec& e, const BnPlan& p, const BnBuffers& b, double eps) {
  STOKER_GPU(cudnnBatchNormalizationForwardInference(
      e.cudnn, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, p.x.get(), b.x, p.x.get(), b.y, p.bn.get(),
      b.gamma, b.beta, b.running_mean, b.running_var, eps));
}

void batchnorm_backward(const GpuExec& e, const BnPlan& p, BnCall call, const BnBuffers& b,
                        const BnGradients& d, float beta_dx, double eps) {
  const cudnnTensorDescriptor_t x = p.x.get();
  if (call == BnCall::plain) {
    STOKER_GPU(cudnnBatchNormalizationBackward(e.cudnn, p.mode, &kOne, &beta_dx, &kOne, &kZero, x,
                                               b.x, x, d.dy, x, d.dx, p.bn.get(), b.gamma, d.dgamma,
                                               d.dbeta, eps, b.save_mean, b.save_invvar));
    return;
  }
  const cudnnBatchNormOps_t ops = bn_ops(call);
  const bool add = call == BnCall::add_relu;
  // The plain form reads no y; the fused ones read the ReLU's output.
  const bool fused = ops != CUDNN_BATCHNORM_OPS_BN;
  STOKER_GPU(cudnnBatchNormalizationBackwardEx(
      e.cudnn, p.mode, ops, &kOne, &beta_dx, &kOne, &kZero, x, b.x, fused ? x : nullptr,
      fused ? b.y : nullptr, x, d.dy, add ? x : nullptr, add ? d.dz : nullptr, x, d.dx, p.bn.get(),
      b.gamma, b.beta, d.dgamma, d.dbeta, eps, b.save_mean, b.save_invvar,
      fused ? p.relu.get() : nullptr, e.workspace, e.workspace_bytes, b.reserve, b.reserve_bytes));
}

}  // namespace stoker::gpu
