// SPDX-License-Identifier: Apache-2.0
// CudnnNet's fully connected layer (cuBLAS GEMMs and our bias kernels) and the loss.
#include "train/gpu/cudnn_net.h"

#include "train/gpu/cuda_check.h"
#include "train/gpu/cudnn_common.h"

namespace stoker::gpu {

void CudnnNet::fc_forward(const Layer& l) {
  const ActShape& in = shapes_[size_t(l.inputs[0])];
  const int k = int(in.elements()), c = l.out_channels, n = int(config_.batch);
  const cublasComputeType_t compute =
      config_.precision == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  float* y = static_cast<float*>(tensors_[size_t(l.output)].act);
  // Row-major Y[n, c] = X[n, k] W[c, k]^T, as column-major Y^T = W^T' X^T.
  STOKER_GPU(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, c, n, k, &kOne,
                          params_[size_t(l.weight)].compute, cuda_type(dtype_), k,
                          tensors_[size_t(l.inputs[0])].act, cuda_type(dtype_), k, &kZero, y,
                          CUDA_R_32F, c, compute, CUBLAS_GEMM_DEFAULT));
  if (l.bias_param >= 0)
    add_bias(y, params_[size_t(l.bias_param)].value.as<float>(), n, c, stream_);
}

void CudnnNet::fc_backward(const Layer& l, float beta_dx) {
  const ActShape& in = shapes_[size_t(l.inputs[0])];
  const int k = int(in.elements()), c = l.out_channels, n = int(config_.batch);
  const cublasComputeType_t compute =
      config_.precision == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const float* dy32 = static_cast<const float*>(tensors_[size_t(l.output)].dact);
  const void* dy = dtype_ == DType::f32 ? static_cast<const void*>(dy32) : dlogits_lowp_.get();
  const GpuParam& w = params_[size_t(l.weight)];
  // dW[c, k] = dY[n, c]^T X[n, k]: column-major dW^T = X^T dY'.
  STOKER_GPU(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, k, c, n, &kOne,
                          tensors_[size_t(l.inputs[0])].act, cuda_type(dtype_), k, dy,
                          cuda_type(dtype_), c, &kZero, w.raw, CUDA_R_32F, k, compute,
                          CUBLAS_GEMM_DEFAULT));
  if (l.bias_param >= 0)
    bias_gradient(dy32, static_cast<float*>(params_[size_t(l.bias_param)].raw), n, c, stream_);
  // dX[n, k] = dY[n, c] W[c, k]: column-major dX^T = W^T dY^T.
  STOKER_GPU(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, k, n, c, &kOne, w.compute,
                          cuda_type(dtype_), k, dy, cuda_type(dtype_), c, &beta_dx,
                          tensors_[size_t(l.inputs[0])].dact, cuda_type(dtype_), k, compute,
                          CUBLAS_GEMM_DEFAULT));
}

// Softmax cross-entropy with label smoothing: the loss into loss_device, the logits'
// gradient (and its low-precision copy).
void CudnnNet::loss_forward() {
  const int64_t classes = net_.num_classes;
  LossArgs a;
  a.logits = logits_device();
  a.labels = labels();
  a.n = config_.batch;
  a.classes = classes;
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
