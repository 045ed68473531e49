// SPDX-License-Identifier: Apache-2.0
// CudnnNet's convolutions: the plan (conv_cudnn.h under the algorithm policy), the forward,
// and the backward-filter and backward-data passes.
#include "train/gpu/cudnn_net.h"

#include <algorithm>
#include <string>

#include "train/gpu/cuda_check.h"
#include "train/gpu/cudnn_common.h"

namespace stoker::gpu {

void CudnnNet::plan_conv_layer(const Layer& l, GpuLayer& g, const ConvPolicy& policy,
                               const std::string& key_prefix, const DeviceBuffer& find_ws,
                               size_t& workspace) {
  const int64_t n = config_.batch;
  const ActShape& in = shapes_[size_t(l.inputs[0])];
  const ActShape& out = shapes_[size_t(l.output)];
  const ConvGeometry geo{n,        in.c,  in.h,  in.w,     out.c,     l.kernel,
                         l.kernel, out.h, out.w, l.stride, l.padding, l.groups};
  const GpuParam& w = params_[size_t(l.weight)];
  const ConvScratch scratch{tensors_[size_t(l.inputs[0])].act,
                            w.compute,
                            tensors_[size_t(l.output)].act,
                            tensors_[size_t(l.inputs[0])].dact,
                            w.raw,
                            find_ws.get(),
                            find_ws.bytes()};
  g.conv = plan_conv(cudnn_, l.name, geo, dtype_, nhwc_, config_.precision, l.inputs[0] != 0,
                     policy, config_.workspace_limit, key_prefix, scratch);
  for (size_t b : g.conv.workspace) workspace = std::max(workspace, b);
  choices_.insert(choices_.end(), g.conv.choices.begin(), g.conv.choices.end());
}

void CudnnNet::forward_conv(const Layer& l, GpuLayer& g) {
  const GpuTensor& x = tensors_[size_t(l.inputs[0])];
  GpuTensor& y = tensors_[size_t(l.output)];
  STOKER_GPU(cudnnConvolutionForward(cudnn_, &kOne, g.conv.x.get(), x.act, g.conv.w.get(),
                                     params_[size_t(l.weight)].compute,
                                     g.conv.desc(ConvPass::forward), g.conv.fwd, workspace_.get(),
                                     workspace_.bytes(), &kZero, g.conv.y.get(), y.act));
}

// The weights' gradient, then (except for the images) the input's, written or added by `beta`.
void CudnnNet::backward_conv(const Layer& l, GpuLayer& g, float beta) {
  const GpuTensor& x = tensors_[size_t(l.inputs[0])];
  const GpuTensor& y = tensors_[size_t(l.output)];
  const GpuParam& w = params_[size_t(l.weight)];
  STOKER_GPU(cudnnConvolutionBackwardFilter(cudnn_, &kOne, g.conv.x.get(), x.act, g.conv.y.get(),
                                            y.dact, g.conv.desc(ConvPass::backward_weights),
                                            g.conv.bwd_filter, workspace_.get(), workspace_.bytes(),
                                            &kZero, g.conv.w.get(), w.raw));
  if (g.conv.has_bwd_data)
    STOKER_GPU(cudnnConvolutionBackwardData(
        cudnn_, &kOne, g.conv.w.get(), w.compute, g.conv.y.get(), y.dact,
        g.conv.desc(ConvPass::backward_data), g.conv.bwd_data, workspace_.get(), workspace_.bytes(),
        &beta, g.conv.x.get(), x.dact));
}

}  // namespace stoker::gpu
