// SPDX-License-Identifier: Apache-2.0
// CudnnNet's batch norms: the statistics descriptor and what the Ex calls offer, which call
// each layer makes (set_fusion), the forward in training and eval, the backward, and
// num_batches_tracked.
#include "train/gpu/cudnn_net.h"

#include <algorithm>

#include "train/gpu/cuda_check.h"
#include "train/gpu/cudnn_common.h"

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

void CudnnNet::set_fusion(int level) {
  fusion_ = level;
  relu_fused_.assign(net_.layers.size(), false);
  for (GpuLayer& g : layers_) {
    g.call = BnCall::plain;
    g.z = g.fused_out = g.fused_bn = -1;
  }
  for (size_t i = 0; i < net_.layers.size(); ++i) {
    const Layer& l = net_.layers[i];
    GpuLayer& g = layers_[i];
    if (l.kind != LayerKind::batchnorm || level < kFuseEx || !g.offers_ex) continue;
    g.call = BnCall::ex;
    if (i + 1 >= net_.layers.size()) continue;
    // The same condition as the in-place ReLU: the BN's output is read by the ReLU only.
    const Layer& next = net_.layers[i + 1];
    if (level >= kFuseRelu && g.offers_relu && next.kind == LayerKind::relu &&
        next.inputs[0] == l.output && tensors_[size_t(next.output)].alias_of == l.output) {
      g.call = BnCall::relu;
      relu_fused_[i + 1] = true;
      continue;
    }
    // A block's last BN: read only by an add (as its branch, computed in place over it),
    // whose output only the next ReLU reads, in place. The shortcut (z) may come after the BN
    // (the downsample), so the fused call runs at the add.
    if (level < kFuseAddRelu || !g.offers_add_relu) continue;
    for (size_t a = i + 1; a + 1 < net_.layers.size(); ++a) {
      const Layer& add = net_.layers[a];
      const Layer& relu = net_.layers[a + 1];
      if (add.kind != LayerKind::add || add.inputs[0] != l.output) continue;
      if (tensors_[size_t(add.output)].alias_of != l.output || relu.kind != LayerKind::relu ||
          relu.inputs[0] != add.output || tensors_[size_t(relu.output)].alias_of != add.output)
        break;
      g.call = BnCall::add_relu;
      g.z = add.inputs[1];
      g.fused_out = relu.output;
      layers_[a].fused_bn = int(i);
      relu_fused_[a + 1] = true;
      break;
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

// Eval: cuDNN's inference call. Training: bn_forward_train, except under add_relu, which runs
// at its add.
void CudnnNet::forward_batchnorm(const Layer& l, GpuLayer& g, bool train) {
  const GpuTensor& x = tensors_[size_t(l.inputs[0])];
  GpuTensor& y = tensors_[size_t(l.output)];
  if (!train)
    STOKER_GPU(cudnnBatchNormalizationForwardInference(
        cudnn_, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, x.desc.get(), x.act, y.desc.get(), y.act,
        g.bn.get(), params_[size_t(l.weight)].value.get(),
        params_[size_t(l.bias_param)].value.get(), params_[size_t(l.running_mean)].value.get(),
        params_[size_t(l.running_var)].value.get(), l.eps));
  else if (g.call != BnCall::add_relu)  // that one runs at its add
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
