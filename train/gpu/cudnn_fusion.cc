// SPDX-License-Identifier: Apache-2.0
// CudnnNet's fusion: at a level (each a fallback of the one above: trial_step), the lowering's
// ops with the patterns the level allows and the config keeps, and which call each batch norm
// makes in training (cudnn_batchnorm.h's BnCall).
#include "common/error.h"
#include "train/gpu/cudnn_net.h"
#include "train/lowering.h"

namespace stoker::gpu {

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
    g.call = net_.layers[i].kind == LayerKind::batchnorm && level >= kFuseEx && g.bn->offers_ex
                 ? BnCall::ex
                 : BnCall::plain;
    g.z = g.fused_out = g.stats_bn = g.prologue_bn = -1;
    g.fe_conv = nullptr;
    g.fe_bn = nullptr;
  }
  const uint32_t bits = (level >= kFuseRelu ? uint32_t(kFuseBnRelu) : 0u) |
                        (level >= kFuseAddRelu ? uint32_t(kFuseBnAddRelu) : 0u) |
                        (level >= kFuseStats ? uint32_t(kFuseConvStats | kFuseConvPrologue) : 0u);
  const auto in_place = [&](int out, int over) { return tensors_[size_t(out)].alias_of == over; };
  const auto offered = [&](const Op& op) {
    const Layer& bn = first_layer(net_, op);
    const GpuLayer& g = layers_[size_t(op.layers[0])];
    if (g.call != BnCall::ex) return false;
    if (op.kind == OpKind::bn_relu) return g.bn->offers_relu && in_place(op.output, bn.output);
    const int sum = net_.layers[size_t(op.layers[1])].output;
    return g.bn->offers_add_relu && in_place(sum, bn.output) && in_place(op.output, sum);
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
    // The graphs accept_conv_stats planned, held by the layer: no lookup per execution.
    std::string why;
    if (op.stats_epilogue) g.fe_conv = fe_conv_plan(op, why);
    if (op.stats_given) g.fe_bn = fe_bn_plan(op, why);
    STOKER_CHECK_MSG(why.empty(), "{}: accepted, then refused: {}", first_layer(net_, op).name,
                     why);
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

}  // namespace stoker::gpu
