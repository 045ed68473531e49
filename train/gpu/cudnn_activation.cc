// SPDX-License-Identifier: Apache-2.0
// CudnnNet's ReLU and residual add (our kernels), forward and backward; a fused batch
// norm's ReLU and add run in its call instead.
#include "train/gpu/cudnn_net.h"

#include "train/gpu/cudnn_common.h"

namespace stoker::gpu {

void CudnnNet::forward_relu(size_t i, const Layer& l, bool train) {
  const GpuTensor& x = tensors_[size_t(l.inputs[0])];
  GpuTensor& y = tensors_[size_t(l.output)];
  if (!(train && relu_fused_[i])) relu_forward(dtype_, x.act, y.act, y.elements, stream_);
}

// Training with a fused BN + add + ReLU: the batch norm's call runs here (its z is ready).
void CudnnNet::forward_add(const Layer& l, GpuLayer& g, bool train) {
  const GpuTensor& x = tensors_[size_t(l.inputs[0])];
  GpuTensor& y = tensors_[size_t(l.output)];
  if (train && g.fused_bn >= 0)
    bn_forward_train(net_.layers[size_t(g.fused_bn)], layers_[size_t(g.fused_bn)]);
  else
    add_forward(dtype_, x.act, tensors_[size_t(l.inputs[1])].act, y.act, y.elements, stream_);
}

void CudnnNet::backward_relu(size_t i, const Layer& l, float beta) {
  const GpuTensor& x = tensors_[size_t(l.inputs[0])];
  const GpuTensor& y = tensors_[size_t(l.output)];
  // Fused: the batch norm's backward applies the ReLU's. In place (aliased): dx is
  // dy's own memory, written for the first time.
  if (relu_fused_[i]) return;
  relu_backward(dtype_, y.act, y.dact, x.dact, y.elements, beta != 0.0f && y.alias_of < 0, stream_);
}

void CudnnNet::backward_add(const Layer& l, GpuLayer& g) {
  const GpuTensor& y = tensors_[size_t(l.output)];
  if (g.fused_bn >= 0) {
    // The fused BN + add + ReLU: dx of the BN's input and dz of the shortcut at once.
    const Layer& bn = net_.layers[size_t(g.fused_bn)];
    const int bn_in = bn.inputs[0];
    bn_backward(bn, layers_[size_t(g.fused_bn)], grad_written_[size_t(bn_in)] ? 1.0f : 0.0f);
    grad_written_[size_t(bn_in)] = true;
    grad_written_[size_t(l.inputs[1])] = true;
    return;
  }
  for (int k = 0; k < 2; ++k) {
    const int t = l.inputs[size_t(k)];
    // In place over the branch (plan_tensors): its gradient is dy's own memory.
    if (tensors_[size_t(t)].dact != y.dact)
      pass_gradient(dtype_, y.dact, tensors_[size_t(t)].dact, y.elements, grad_written_[size_t(t)],
                    stream_);
    grad_written_[size_t(t)] = true;
  }
}

}  // namespace stoker::gpu
