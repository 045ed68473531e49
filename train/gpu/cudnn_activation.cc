// SPDX-License-Identifier: Apache-2.0
// CudnnNet's ReLU and residual add (our kernels), forward and backward, where they run as ops
// of their own; a fused batch norm's ReLU and add run in its call instead (cudnn_batchnorm.cc).
#include "train/gpu/cudnn_net.h"

#include "train/gpu/cudnn_common.h"

namespace stoker::gpu {

void CudnnNet::forward_relu(const Layer& l) {
  const GpuTensor& x = tensors_[size_t(l.inputs[0])];
  GpuTensor& y = tensors_[size_t(l.output)];
  relu_forward(dtype_, x.act, y.act, y.elements, stream_);
}

void CudnnNet::forward_add(const Layer& l) {
  const GpuTensor& x = tensors_[size_t(l.inputs[0])];
  GpuTensor& y = tensors_[size_t(l.output)];
  add_forward(dtype_, x.act, tensors_[size_t(l.inputs[1])].act, y.act, y.elements, stream_);
}

// In place (aliased): dx is dy's own memory, written for the first time.
void CudnnNet::backward_relu(const Layer& l, float beta) {
  const GpuTensor& x = tensors_[size_t(l.inputs[0])];
  const GpuTensor& y = tensors_[size_t(l.output)];
  relu_backward(dtype_, y.act, y.dact, x.dact, y.elements, beta != 0.0f && y.alias_of < 0, stream_);
}

void CudnnNet::backward_add(const Layer& l) {
  const GpuTensor& y = tensors_[size_t(l.output)];
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
