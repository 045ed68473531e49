// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/cublas_linear.h"

#include "train/gpu/cuda_check.h"

namespace stoker::gpu {
namespace {

cublasComputeType_t compute_type(Precision p) {
  return p == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

}  // namespace

void linear_forward(const GpuExec& e, const LinearShape& s, const void* x, const void* w,
                    const float* bias, float* y) {
  const cudaDataType_t t = cuda_type(s.dtype);
  // Row-major Y[n, out] = X[n, in] W[out, in]^T, as column-major Y^T = W^T' X^T.
  STOKER_GPU(cublasGemmEx(e.cublas, CUBLAS_OP_T, CUBLAS_OP_N, s.out, s.n, s.in, &kOne, w, t, s.in,
                          x, t, s.in, &kZero, y, CUDA_R_32F, s.out, compute_type(s.precision),
                          CUBLAS_GEMM_DEFAULT));
  if (bias != nullptr) add_bias(y, bias, s.n, s.out, e.stream);
}

void linear_backward(const GpuExec& e, const LinearShape& s, const void* x, const void* w,
                     const float* dy32, const void* dy, float* dw, float* dbias, void* dx,
                     float beta_dx) {
  const cudaDataType_t t = cuda_type(s.dtype);
  const cublasComputeType_t compute = compute_type(s.precision);
  // dW[out, in] = dY[n, out]^T X[n, in]: column-major dW^T = X^T dY'.
  STOKER_GPU(cublasGemmEx(e.cublas, CUBLAS_OP_N, CUBLAS_OP_T, s.in, s.out, s.n, &kOne, x, t, s.in,
                          dy, t, s.out, &kZero, dw, CUDA_R_32F, s.in, compute,
                          CUBLAS_GEMM_DEFAULT));
  if (dbias != nullptr) bias_gradient(dy32, dbias, s.n, s.out, e.stream);
  // dX[n, in] = dY[n, out] W[out, in]: column-major dX^T = W^T dY^T.
  STOKER_GPU(cublasGemmEx(e.cublas, CUBLAS_OP_N, CUBLAS_OP_N, s.in, s.n, s.out, &kOne, w, t, s.in,
                          dy, t, s.out, &beta_dx, dx, t, s.in, compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace stoker::gpu
