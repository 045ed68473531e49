// SPDX-License-Identifier: Apache-2.0
// CudnnNet's conv_stats pattern (train/lowering.h, kFuseConvStats; issue 45): which instances
// the cuDNN frontend plans, and the ops that run its graphs (cudnn_fe_graphs.h) in training.
// A conv writes its output's per-channel sums beside the output; the batch norm that alone
// reads it finalizes them and applies scale and bias (with the add and ReLU of its op), and
// its backward is one frontend graph with the ReLU's gradient in front. Eval runs the layers
// as without it (cudnn_net_ops.cc: forward_batchnorm_op). Behind --fusions conv_stats until a GPU
// run has shown it right and faster (docs/GPU.md).
#include <algorithm>

#include "common/error.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/cudnn_net.h"
#include "train/lowering.h"

namespace stoker::gpu {

FeConvShape fe_conv_shape(const Layer& conv, const ActShape& in, int64_t batch, DType dtype,
                          bool prologue) {
  return {.n = batch,
          .c = in.c,
          .h = in.h,
          .w = in.w,
          .k = conv.out_channels,
          .r = conv.kernel,
          .s = conv.kernel,
          .stride = conv.stride,
          .pad = conv.padding,
          .dtype = dtype,
          .prologue = prologue};
}

FeBnShape fe_bn_shape(const Op& op, const Layer& bn, const ActShape& in, int64_t batch,
                      DType dtype) {
  return {.n = batch,
          .c = in.c,
          .h = in.h,
          .w = in.w,
          .dtype = dtype,
          .add = op.kind == OpKind::bn_add_relu,
          .relu = op.kind != OpKind::batchnorm,
          .prologue = op.apply_in_reader,
          .eps = float(bn.eps),
          .momentum = float(bn.momentum)};
}

FeConvShape CudnnNet::fe_conv_shape(const Layer& l, bool prologue) const {
  return gpu::fe_conv_shape(l, shapes_[size_t(l.inputs[0])], config_.batch, dtype_, prologue);
}

// The eq_scale and eq_bias of the batch norm a prologue conv applies.
FePrologue CudnnNet::fe_prologue(const GpuLayer& conv) const {
  if (conv.prologue_bn < 0) return {};
  const FeBnStats s = fe_stats(layers_[size_t(conv.prologue_bn)]);
  return {.scale = s.eq_scale, .bias = s.eq_bias};
}

FeBnShape CudnnNet::fe_bn_shape(const Op& op) const {
  const Layer& l = first_layer(net_, op);
  return gpu::fe_bn_shape(op, l, shapes_[size_t(l.inputs[0])], config_.batch, dtype_);
}

FeBnStats CudnnNet::fe_stats(const GpuLayer& bn) const {
  const size_t c = bn.fe_stats.bytes() / (6 * sizeof(float));
  STOKER_CHECK(c > 0);
  float* base = bn.fe_stats.as<float>();
  return {.sum = base,
          .sq_sum = base + c,
          .eq_scale = base + 2 * c,
          .eq_bias = base + 3 * c,
          .next_mean = base + 4 * c,
          .next_var = base + 5 * c};
}

// The lowering's question for a conv (stats_epilogue; then prologue) or its batch norm's op
// (stats_given; then apply_in_reader): does the frontend plan its graphs for these shapes (NHWC
// f16 and bf16 only; it refuses bf16 convs). The first refusal is kept for the run's header.
bool CudnnNet::accept_conv_stats(const Op& op) {
  std::string why;
  bool ok = false;
  if (fe_ == nullptr) {
    why = "this build has no cuDNN frontend (scripts/deps.sh fetches nvidia-cudnn-frontend)";
  } else if (!nhwc_ || dtype_ == DType::f32) {
    why = "the frontend's statistics graphs are planned for NHWC f16 and bf16 only";
  } else if (op.prologue && !op.stats_epilogue) {
    why = "a prologue is planned with the conv's statistics epilogue only";
  } else if (op.stats_epilogue) {
    ok = fe_conv_plan(op, why) != nullptr;
  } else {
    ok = fe_bn_plan(op, why) != nullptr;
  }
  if (!ok && fe_refusal_.empty())
    fe_refusal_ = fmt::format("{}: {}", first_layer(net_, op).name, why);
  return ok;
}

// The op's graphs, planned (a lookup once accept_conv_stats has asked), the workspace raised.
std::shared_ptr<const FeConvPlan> CudnnNet::fe_conv_plan(const Op& op, std::string& why) {
  return fe_plan_conv_stats(*fe_, cudnn_, fe_conv_shape(first_layer(net_, op), op.prologue),
                            fe_workspace_, why);
}

std::shared_ptr<const FeBnPlan> CudnnNet::fe_bn_plan(const Op& op, std::string& why) {
  return fe_plan_batchnorm(*fe_, cudnn_, fe_bn_shape(op), fe_workspace_, why);
}

int CudnnNet::conv_stats_fused() const {
  return int(std::count_if(lowering_.ops.begin(), lowering_.ops.end(),
                           [](const Op& op) { return op.stats_epilogue; }));
}

int CudnnNet::conv_prologue_fused() const {
  return int(std::count_if(lowering_.ops.begin(), lowering_.ops.end(),
                           [](const Op& op) { return op.prologue; }));
}

// y = conv(x, w), and its batch norm's sums (layer g.stats_bn's fe_stats). Under a prologue x
// is relu(bn(x0)) of the applied batch norm's input x0, which the conv reads instead.
void CudnnNet::forward_conv_stats(const Layer& l, GpuLayer& g) {
  STOKER_CHECK(g.stats_bn >= 0 && g.fe_conv);
  const int x = g.prologue_bn >= 0 ? net_.layers[size_t(g.prologue_bn)].inputs[0] : l.inputs[0];
  conv2d_forward_with_stats(*g.fe_conv, cudnn_, tensors_[size_t(x)].act,
                            params_[size_t(l.weight)].compute, fe_prologue(g),
                            tensors_[size_t(l.output)].act, fe_stats(layers_[size_t(g.stats_bn)]),
                            workspace_.get(), workspace_.bytes());
}

// A prologue conv's backward: the weights' gradient at relu(bn(x0)), and the gradient at the
// applied batch norm's output (the ReLU's gradient in), written into the ReLU output's
// gradient memory, where that batch norm's backward reads it (backward_bn_from_stats).
void CudnnNet::backward_conv_prologue(const Layer& l, GpuLayer& g, float beta) {
  STOKER_CHECK_MSG(beta == 0.0f, "{}: a prologue conv's input has another reader", l.name);
  const GpuTensor& x0 = tensors_[size_t(net_.layers[size_t(g.prologue_bn)].inputs[0])];
  const GpuTensor& y = tensors_[size_t(l.output)];
  const GpuParam& w = params_[size_t(l.weight)];
  STOKER_CHECK(g.fe_conv);
  conv2d_backward_weights_prologue(*g.fe_conv, cudnn_, y.dact, x0.act, fe_prologue(g), w.raw,
                                   workspace_.get(), workspace_.bytes());
  conv2d_backward_data_relu(*g.fe_conv, cudnn_, y.dact, w.compute, x0.act, fe_prologue(g),
                            tensors_[size_t(l.inputs[0])].dact, workspace_.get(),
                            workspace_.bytes());
}

// The batch norm op's forward in training from the conv's sums: y = [relu](bn(x) [+ z]) into
// the op's output, the running statistics updated and the batch's kept for the backward.
void CudnnNet::forward_bn_from_stats(const Op& op) {
  const Layer& l = first_layer(net_, op);
  GpuLayer& g = layers_[size_t(op.layers[0])];
  FeBnForward a;
  a.x = tensors_[size_t(l.inputs[0])].act;
  a.z = op.kind == OpKind::bn_add_relu ? tensors_[size_t(op.inputs[1])].act : nullptr;
  a.y = tensors_[size_t(op.output)].act;
  a.mask = g.fe_mask.get();
  a.gamma = params_[size_t(l.weight)].value.as<float>();
  a.beta = params_[size_t(l.bias_param)].value.as<float>();
  a.running_mean = params_[size_t(l.running_mean)].value.as<float>();
  a.running_var = params_[size_t(l.running_var)].value.as<float>();
  a.save_mean = g.save_mean.as<float>();
  a.save_invvar = g.save_invvar.as<float>();
  STOKER_CHECK(g.fe_bn);
  batchnorm_forward_train(*g.fe_bn, cudnn_, stream_, a, fe_stats(g), workspace_.get(),
                          workspace_.bytes());
}

// Its backward from dy at the op's output: dx written (the conv's output has this batch norm
// as its only reader, so nothing was there to add to), dz for the shortcut, dgamma and dbeta.
void CudnnNet::backward_bn_from_stats(const Op& op, float beta) {
  const Layer& l = first_layer(net_, op);
  STOKER_CHECK_MSG(beta == 0.0f, "{}: conv_stats batch norm input has another reader", l.name);
  const GpuLayer& g = layers_[size_t(op.layers[0])];
  FeBnBackward a;
  a.dy = tensors_[size_t(op.output)].dact;
  a.mask = g.fe_mask.get();
  a.x = tensors_[size_t(l.inputs[0])].act;
  a.gamma = params_[size_t(l.weight)].value.as<float>();
  a.save_mean = g.save_mean.as<float>();
  a.save_invvar = g.save_invvar.as<float>();
  a.dx = tensors_[size_t(l.inputs[0])].dact;
  a.dz = op.kind == OpKind::bn_add_relu ? tensors_[size_t(op.inputs[1])].dact : nullptr;
  a.dgamma = static_cast<float*>(params_[size_t(l.weight)].raw);
  a.dbeta = static_cast<float*>(params_[size_t(l.bias_param)].raw);
  STOKER_CHECK(g.fe_bn);
  batchnorm_backward(*g.fe_bn, cudnn_, a, workspace_.get(), workspace_.bytes());
}

}  // namespace stoker::gpu
