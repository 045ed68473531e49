// SPDX-License-Identifier: Apache-2.0
// CudnnNet's batch norms: the statistics descriptor and what the Ex calls offer, which call
// each layer makes (set_fusion, from the lowering's patterns), the forward in training and eval,
// the backward, and num_batches_tracked.
#include "train/gpu/cudnn_net.h"

#include <algorithm>

#include "train/gpu/cuda_check.h"
#include "train/gpu/cudnn_common.h"
#include "train/lowering.h"

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

}  // namespace

// The ops come from the lowering (train/lowering.h) with the patterns this level allows and
// the config keeps, each instance taken where cuDNN offers its Ex form for the layer's shapes
// and plan_tensors computed the ReLU (and the add) in place over the batch norm's output; a
// conv_stats pair where the frontend plans its graphs (accept_conv_stats).
void CudnnNet::set_fusion(int level) {
  fusion_ = level;
  fe_workspace_ = 0;
  fe_refusal_.clear();
  for (size_t i = 0; i < net_.layers.size(); ++i) {
    GpuLayer& g = layers_[i];
    g.call = net_.layers[i].kind == LayerKind::batchnorm && level >= kFuseEx && g.offers_ex
                 ? BnCall::ex
                 : BnCall::plain;
    g.z = g.fused_out = g.stats_bn = g.prologue_bn = -1;
  }
  const uint32_t bits = (level >= kFuseRelu ? uint32_t(kFuseBnRelu) : 0u) |
                        (level >= kFuseAddRelu ? uint32_t(kFuseBnAddRelu) : 0u) |
                        (level >= kFuseStats ? uint32_t(kFuseConvStats | kFuseConvPrologue) : 0u);
  const auto in_place = [&](int out, int over) { return tensors_[size_t(out)].alias_of == over; };
  const auto offered = [&](const Op& op) {
    const Layer& bn = first_layer(net_, op);
    const GpuLayer& g = layers_[size_t(op.layers[0])];
    if (g.call != BnCall::ex) return false;
    if (op.kind == OpKind::bn_relu) return g.offers_relu && in_place(op.output, bn.output);
    const int sum = net_.layers[size_t(op.layers[1])].output;
    return g.offers_add_relu && in_place(sum, bn.output) && in_place(op.output, sum);
  };
  lowering_ = lower(net_, bits & config_.fusions, [&](const Op& op) {
    return op.stats_epilogue || op.stats_given ? accept_conv_stats(op) : offered(op);
  });
  std::vector<int> writer(net_.tensors.size(), -1);  // per tensor: the layer of the op writing it
  for (const Op& op : lowering_.ops) writer[size_t(op.output)] = op.layers[0];
  unwritten_.assign(net_.tensors.size(), false);
  for (const Op& op : lowering_.ops) {
    GpuLayer& g = layers_[size_t(op.layers[0])];
    if (op.stats_given) layers_[size_t(writer[size_t(op.inputs[0])])].stats_bn = op.layers[0];
    if (op.prologue) g.prologue_bn = writer[size_t(op.inputs[0])];
    // The frontend's batch norm writes its op's output only (not a hidden batch-norm output);
    // under a prologue not even that.
    if (op.stats_given)
      for (int t : op.hidden) unwritten_[size_t(t)] = true;
    if (op.apply_in_reader) unwritten_[size_t(op.output)] = true;
    if (op.kind == OpKind::bn_relu) {
      g.call = BnCall::relu;
    } else if (op.kind == OpKind::bn_add_relu) {
      g.call = BnCall::add_relu;
      g.z = op.inputs[1];
      g.fused_out = op.output;
    }
  }
}

// A batch norm's statistics descriptor and buffers; under fusion also which Ex forms cuDNN
// sizes for its shapes (a refusal here only means that form is not used for this layer), with
// the largest workspace and reserve space among them.
void CudnnNet::plan_batchnorm(const Layer& l, GpuLayer& g, size_t& workspace) {
  cudnnTensorDescriptor_t d = nullptr;
  STOKER_GPU(cudnnCreateTensorDescriptor(&d));
  g.bn.reset(d);
  const cudnnTensorDescriptor_t x = tensors_[size_t(l.inputs[0])].desc.get();
  STOKER_GPU(cudnnDeriveBNTensorDescriptor(d, x, bn_mode_));
  const int64_t c = shapes_[size_t(l.output)].c;
  alloc(g.save_mean, size_t(c) * sizeof(float));
  alloc(g.save_invvar, size_t(c) * sizeof(float));
  if (fusion_ >= kFuseStats) {
    alloc(g.fe_stats, 6 * size_t(c) * sizeof(float));
    alloc(g.fe_mask, fe_mask_bytes(tensors_[size_t(l.output)].elements));
  }
  if (fusion_ == kFusePlain) return;
  size_t reserve = 0;
  const auto offers = [&](cudnnBatchNormOps_t ops) {
    const bool add = ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
    const cudnnActivationDescriptor_t act =
        ops == CUDNN_BATCHNORM_OPS_BN ? nullptr : relu_desc_.get();
    size_t fwd = 0, bwd = 0, res = 0;
    if (cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
            cudnn_, bn_mode_, ops, x, add ? x : nullptr, x, d, act, &fwd) != CUDNN_STATUS_SUCCESS ||
        cudnnGetBatchNormalizationBackwardExWorkspaceSize(cudnn_, bn_mode_, ops, x, x, x,
                                                          add ? x : nullptr, x, d, act,
                                                          &bwd) != CUDNN_STATUS_SUCCESS ||
        cudnnGetBatchNormalizationTrainingExReserveSpaceSize(cudnn_, bn_mode_, ops, act, x, &res) !=
            CUDNN_STATUS_SUCCESS)
      return false;
    workspace = std::max({workspace, fwd, bwd});
    reserve = std::max(reserve, res);
    return true;
  };
  g.offers_ex = offers(CUDNN_BATCHNORM_OPS_BN);
  g.offers_relu = g.offers_ex && offers(CUDNN_BATCHNORM_OPS_BN_ACTIVATION);
  g.offers_add_relu = g.offers_ex && offers(CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION);
  if (g.offers_ex) alloc(g.reserve, std::max<size_t>(reserve, 1));
}

// Eval: cuDNN's inference call. Training: bn_forward_train (a batchnorm op's: plain or Ex).
void CudnnNet::forward_batchnorm(const Layer& l, GpuLayer& g, bool train) {
  const GpuTensor& x = tensors_[size_t(l.inputs[0])];
  GpuTensor& y = tensors_[size_t(l.output)];
  if (!train)
    STOKER_GPU(cudnnBatchNormalizationForwardInference(
        cudnn_, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, x.desc.get(), x.act, y.desc.get(), y.act,
        g.bn.get(), params_[size_t(l.weight)].value.get(),
        params_[size_t(l.bias_param)].value.get(), params_[size_t(l.running_mean)].value.get(),
        params_[size_t(l.running_var)].value.get(), l.eps));
  else
    bn_forward_train(l, g);
}

// A batch norm in training, batch statistics and the running-statistics update (torch's
// momentum, unbiased variance), by the call set_fusion chose: y = bn(x), relu(bn(x)) into the
// ReLU's output (the same memory), or relu(bn(x) + z) into the ReLU after the add.
void CudnnNet::bn_forward_train(const Layer& l, GpuLayer& g) {
  const GpuTensor& x = tensors_[size_t(l.inputs[0])];
  const GpuTensor& y = tensors_[size_t(g.call == BnCall::add_relu ? g.fused_out : l.output)];
  const void* scale = params_[size_t(l.weight)].value.get();
  const void* bias = params_[size_t(l.bias_param)].value.get();
  void* mean = params_[size_t(l.running_mean)].value.get();
  void* var = params_[size_t(l.running_var)].value.get();
  if (g.call == BnCall::plain) {
    STOKER_GPU(cudnnBatchNormalizationForwardTraining(
        cudnn_, bn_mode_, &kOne, &kZero, x.desc.get(), x.act, y.desc.get(), y.act, g.bn.get(),
        scale, bias, l.momentum, mean, var, l.eps, g.save_mean.get(), g.save_invvar.get()));
    return;
  }
  const cudnnBatchNormOps_t ops = bn_ops(g.call);
  const GpuTensor* z = g.call == BnCall::add_relu ? &tensors_[size_t(g.z)] : nullptr;
  STOKER_GPU(cudnnBatchNormalizationForwardTrainingEx(
      cudnn_, bn_mode_, ops, &kOne, &kZero, x.desc.get(), x.act, z ? z->desc.get() : nullptr,
      z ? z->act : nullptr, y.desc.get(), y.act, g.bn.get(), scale, bias, l.momentum, mean, var,
      l.eps, g.save_mean.get(), g.save_invvar.get(),
      ops == CUDNN_BATCHNORM_OPS_BN ? nullptr : relu_desc_.get(), workspace_.get(),
      workspace_.bytes(), g.reserve.get(), g.reserve.bytes()));
}

// Its backward: dx (+)= by `beta`, the scale and bias gradients written; the fused forms take
// y and dy at the ReLU's output and apply the ReLU's gradient, add_relu also writes dz.
void CudnnNet::bn_backward(const Layer& l, GpuLayer& g, float beta) {
  const GpuTensor& x = tensors_[size_t(l.inputs[0])];
  const GpuTensor& y = tensors_[size_t(g.call == BnCall::add_relu ? g.fused_out : l.output)];
  const void* scale = params_[size_t(l.weight)].value.get();
  void* dscale = params_[size_t(l.weight)].raw;
  void* dbias = params_[size_t(l.bias_param)].raw;
  if (g.call == BnCall::plain) {
    STOKER_GPU(cudnnBatchNormalizationBackward(
        cudnn_, bn_mode_, &kOne, &beta, &kOne, &kZero, x.desc.get(), x.act, y.desc.get(), y.dact,
        x.desc.get(), x.dact, g.bn.get(), scale, dscale, dbias, l.eps, g.save_mean.get(),
        g.save_invvar.get()));
    return;
  }
  const cudnnBatchNormOps_t ops = bn_ops(g.call);
  const GpuTensor* z = g.call == BnCall::add_relu ? &tensors_[size_t(g.z)] : nullptr;
  // The plain form reads no y; the fused ones read the ReLU's output.
  const bool fused = ops != CUDNN_BATCHNORM_OPS_BN;
  STOKER_GPU(cudnnBatchNormalizationBackwardEx(
      cudnn_, bn_mode_, ops, &kOne, &beta, &kOne, &kZero, x.desc.get(), x.act,
      fused ? y.desc.get() : nullptr, fused ? y.act : nullptr, y.desc.get(), y.dact,
      z ? z->desc.get() : nullptr, z ? z->dact : nullptr, x.desc.get(), x.dact, g.bn.get(), scale,
      params_[size_t(l.bias_param)].value.get(), dscale, dbias, l.eps, g.save_mean.get(),
      g.save_invvar.get(), fused ? relu_desc_.get() : nullptr, workspace_.get(), workspace_.bytes(),
      g.reserve.get(), g.reserve.bytes()));
}

void CudnnNet::count_batch() {
  for (const Layer& l : net_.layers)
    if (l.kind == LayerKind::batchnorm && l.num_batches_tracked >= 0)
      ++params_[size_t(l.num_batches_tracked)].count;
}

}  // namespace stoker::gpu
