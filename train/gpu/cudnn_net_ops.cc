// SPDX-License-Identifier: Apache-2.0
// CudnnNet's programs op by op: each op of the lowering (train/lowering.h) bound to its tensors
// and parameters and run by the free functions named like train/reference/ (conv2d_forward,
// batchnorm_backward, maxpool2d_backward, linear_forward, relu_forward, ...: conv_cudnn.h,
// cudnn_batchnorm.h, cudnn_pool.h, cublas_linear.h, kernels/kernels.h; the conv_stats pattern's:
// cudnn_conv_stats.cc). Forward runs the ops in order, the backward in reverse; nothing here
// plans or allocates.
#include "common/error.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/cudnn_common.h"
#include "train/gpu/cudnn_net.h"
#include "train/lowering.h"

namespace stoker::gpu {

GpuExec CudnnNet::exec() const {
  return {.cudnn = cudnn_,
          .cublas = cublas_,
          .stream = stream_,
          .workspace = workspace_.get(),
          .workspace_bytes = workspace_.bytes()};
}

// A batch-norm op's buffers: its input; under bn_add_relu the shortcut and the ReLU's output
// (y: the op's output, computed in place over the batch norm's and the add's).
BnBuffers CudnnNet::bn_buffers(const Op& op) const {
  const Layer& l = first_layer(net_, op);
  const GpuLayer& g = layers_[size_t(op.layers[0])];
  BnBuffers b;
  b.x = tensors_[size_t(l.inputs[0])].act;
  b.z = g.call == BnCall::add_relu ? tensors_[size_t(g.z)].act : nullptr;
  b.y = tensors_[size_t(g.call == BnCall::add_relu ? g.fused_out : l.output)].act;
  b.gamma = params_[size_t(l.weight)].value.as<float>();
  b.beta = params_[size_t(l.bias_param)].value.as<float>();
  b.running_mean = params_[size_t(l.running_mean)].value.as<float>();
  b.running_var = params_[size_t(l.running_var)].value.as<float>();
  b.save_mean = g.save_mean.as<float>();
  b.save_invvar = g.save_invvar.as<float>();
  b.reserve = g.reserve.get();
  b.reserve_bytes = g.reserve.bytes();
  return b;
}

// Training: one call by set_fusion's choice (relu(bn(x) [+ z]) into the ReLU's output under the
// fused ones). Eval: the layers one by one, cuDNN's inference call, then the add and the ReLU.
void CudnnNet::forward_batchnorm_op(const Op& op, bool train) {
  const Layer& l = first_layer(net_, op);
  const GpuLayer& g = layers_[size_t(op.layers[0])];
  const GpuExec e = exec();
  if (train) return batchnorm_forward_train(e, *g.bn, g.call, bn_buffers(op), l.eps, l.momentum);
  BnBuffers b = bn_buffers(op);
  b.y = tensors_[size_t(l.output)].act;
  batchnorm_forward_infer(e, *g.bn, b, l.eps);
  if (op.kind == OpKind::bn_add_relu) {
    const Layer& add = net_.layers[size_t(op.layers[1])];
    const GpuTensor& sum = tensors_[size_t(add.output)];
    add_forward(dtype_, tensors_[size_t(add.inputs[0])].act, tensors_[size_t(add.inputs[1])].act,
                sum.act, sum.elements, stream_);
  }
  if (op.kind != OpKind::batchnorm) {
    const Layer& relu = last_layer(net_, op);
    const GpuTensor& y = tensors_[size_t(relu.output)];
    relu_forward(dtype_, tensors_[size_t(relu.inputs[0])].act, y.act, y.elements, stream_);
  }
}

void CudnnNet::forward_op(const Op& op, bool train) {
  const Layer& l = first_layer(net_, op);
  GpuLayer& g = layers_[size_t(op.layers[0])];
  if (train && op.stats_epilogue) return forward_conv_stats(l, g);
  if (train && op.stats_given) return forward_bn_from_stats(op);
  const GpuExec e = exec();
  const void* x = tensors_[size_t(l.inputs[0])].act;
  const GpuTensor& y = tensors_[size_t(l.output)];
  switch (op.kind) {
    case OpKind::conv:
      return conv2d_forward(e, *g.conv, x, params_[size_t(l.weight)].compute, y.act);
    case OpKind::batchnorm:
    case OpKind::bn_relu:
    case OpKind::bn_add_relu:
      return forward_batchnorm_op(op, train);
    case OpKind::relu:
      return relu_forward(dtype_, x, y.act, y.elements, stream_);
    case OpKind::add:
      return add_forward(dtype_, x, tensors_[size_t(l.inputs[1])].act, y.act, y.elements, stream_);
    case OpKind::maxpool:
      return maxpool2d_forward(e, *g.pool, x, y.act);
    case OpKind::global_avgpool:
      return global_avgpool_forward(e, *g.pool, x, y.act);
    case OpKind::fc: {
      const float* bias =
          l.bias_param >= 0 ? params_[size_t(l.bias_param)].value.as<float>() : nullptr;
      return linear_forward(e, g.linear, x, params_[size_t(l.weight)].compute, bias,
                            static_cast<float*>(y.act));
    }
  }
}

// dy passes to both inputs; in place over the branch (plan_tensors), the branch's gradient is
// dy's own memory.
void CudnnNet::backward_add(const Layer& l) {
  const GpuTensor& y = tensors_[size_t(l.output)];
  for (int k = 0; k < 2; ++k) {
    const int t = l.inputs[size_t(k)];
    if (tensors_[size_t(t)].dact != y.dact)
      pass_gradient(dtype_, y.dact, tensors_[size_t(t)].dact, y.elements, grad_written_[size_t(t)],
                    stream_);
    grad_written_[size_t(t)] = true;
  }
}

// The first gradient reaching a tensor is written, later ones added (a block's input feeds
// its first conv and its shortcut). A fused op's backward is its batch norm's call, reading y
// and dy at the ReLU's output; bn_add_relu's also writes dz, the shortcut's first gradient
// (the add is its last reader).
void CudnnNet::backward_op(const Op& op) {
  const Layer& l = first_layer(net_, op);
  GpuLayer& g = layers_[size_t(op.layers[0])];
  const int in = op.inputs[0];
  const float beta = grad_written_[size_t(in)] ? 1.0f : 0.0f;
  const GpuExec e = exec();
  const GpuTensor& x = tensors_[size_t(in)];
  const GpuTensor& y = tensors_[size_t(l.output)];
  switch (op.kind) {
    case OpKind::conv: {
      if (g.prologue_bn >= 0) {
        backward_conv_prologue(l, g, beta);
        break;
      }
      const GpuParam& w = params_[size_t(l.weight)];
      conv2d_backward(e, *g.conv, x.act, y.dact, w.compute, w.raw, x.dact, beta);
      break;
    }
    case OpKind::batchnorm:
    case OpKind::bn_relu:
    case OpKind::bn_add_relu:
      if (op.stats_given) {
        backward_bn_from_stats(op, beta);
      } else {
        const BnGradients d{
            .dy = tensors_[size_t(g.call == BnCall::add_relu ? g.fused_out : l.output)].dact,
            .dx = x.dact,
            .dz = g.call == BnCall::add_relu ? tensors_[size_t(g.z)].dact : nullptr,
            .dgamma = static_cast<float*>(params_[size_t(l.weight)].raw),
            .dbeta = static_cast<float*>(params_[size_t(l.bias_param)].raw)};
        batchnorm_backward(e, *g.bn, g.call, bn_buffers(op), d, beta, l.eps);
      }
      if (op.kind == OpKind::bn_add_relu) grad_written_[size_t(op.inputs[1])] = true;
      break;
    case OpKind::relu:
      // In place (aliased): dx is dy's own memory, written for the first time.
      relu_backward(dtype_, y.act, y.dact, x.dact, y.elements, beta != 0.0f && y.alias_of < 0,
                    stream_);
      break;
    case OpKind::add:
      backward_add(l);
      break;
    case OpKind::maxpool:
      maxpool2d_backward(e, *g.pool, x.act, y.dact, x.dact, g.pool_offsets.get(), beta != 0.0f);
      break;
    case OpKind::global_avgpool:
      global_avgpool_backward(e, *g.pool, x.act, y.act, y.dact, x.dact, beta);
      break;
    case OpKind::fc: {
      const float* dy32 = static_cast<const float*>(y.dact);
      const void* dy = dtype_ == DType::f32 ? static_cast<const void*>(dy32) : dlogits_lowp_.get();
      const GpuParam& w = params_[size_t(l.weight)];
      float* dbias =
          l.bias_param >= 0 ? static_cast<float*>(params_[size_t(l.bias_param)].raw) : nullptr;
      linear_backward(e, g.linear, x.act, w.compute, dy32, dy, static_cast<float*>(w.raw), dbias,
                      x.dact, beta);
      break;
    }
  }
  if (in != 0) grad_written_[size_t(in)] = true;
}

// Softmax cross-entropy with label smoothing: the loss into loss_device, the logits'
// gradient (and its low-precision copy).
void CudnnNet::loss_forward() {
  LossArgs a;
  a.logits = logits_device();
  a.labels = labels();
  a.n = config_.batch;
  a.classes = net_.num_classes;
  a.smoothing = config_.label_smoothing;
  a.scale = loss_scale_device();
  a.loss = loss_device();
  a.per_sample = per_sample_.as<float>();
  a.dlogits = static_cast<float*>(tensors_.back().dact);
  a.dlogits_lowp = dtype_ == DType::f32 ? nullptr : dlogits_lowp_.get();
  a.lowp = dtype_;
  softmax_cross_entropy(a, stream_);
}

}  // namespace stoker::gpu
