// SPDX-License-Identifier: Apache-2.0
// One convolution of the GPU backend, planned and executed. The plan: the descriptors (tensors,
// filter, one convolution descriptor per pass carrying the math type cuDNN ranked that pass's
// algorithm with; owning handles, handles.h) and the algorithm of each pass chosen by the policy
// (heuristic: cuDNN's first ranked choice within the workspace limit; exhaustive: measured by
// cudnnFind*Ex once per key, process-wide cache; fixed:<name>: that algorithm where cuDNN supports
// it within the limit, else the heuristic, said in the choice). Built once per ConvShape
// (op_shapes.h: the backend's PlanCache shares one plan between the layers of a shape), then
// executed by conv2d_forward and conv2d_backward, named as train/reference/conv.h's.
#pragma once

#include <cudnn.h>

#include <array>
#include <cstddef>
#include <memory>
#include <string>

#include "train/backend.h"
#include "train/gpu/algo_cache.h"
#include "train/gpu/cudnn_common.h"
#include "train/gpu/handles.h"
#include "train/gpu/kernels/kernels.h"
#include "train/gpu/op_shapes.h"

namespace stoker::gpu {

cudnnDataType_t cudnn_dtype(DType t);
// A 4-D tensor n x c x h x w, stored NCHW or NHWC.
TensorDesc make_tensor_desc(DType t, bool nhwc, int64_t n, int64_t c, int64_t h, int64_t w);

// Where an exhaustive search may run the convolution (planning only; contents are clobbered).
struct ConvScratch {
  const void* x = nullptr;
  const void* w = nullptr;
  void* y = nullptr;
  void* dx = nullptr;
  void* dw = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

struct ConvPlan {
  TensorDesc x, y;
  FilterDesc w;
  // By ConvPass: cuDNN pairs each ranked algorithm with a math type (its perf results'
  // mathType), and the kernel that runs is chosen by both, so each pass has its own.
  std::array<ConvDesc, 3> conv;
  std::array<cudnnMathType_t, 3> math = {CUDNN_DEFAULT_MATH, CUDNN_DEFAULT_MATH,
                                         CUDNN_DEFAULT_MATH};
  cudnnConvolutionDescriptor_t desc(ConvPass pass) const { return conv[size_t(pass)].get(); }
  cudnnConvolutionFwdAlgo_t fwd = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t bwd_data = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  cudnnConvolutionBwdFilterAlgo_t bwd_filter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  bool has_bwd_data = false;                    // false for the first conv (no image gradient)
  std::array<size_t, 3> workspace = {0, 0, 0};  // by ConvPass
  std::vector<ConvChoice> choices;
};

// Descriptors and algorithms of one convolution; the math type planned is gpu_policy.h's
// conv_math_type(precision). `key_prefix` names the device and library version (the measured
// choices' keys must not be shared across them); the choices name `layer`. stoker::Error naming
// the layer when cuDNN offers no algorithm within the limit.
ConvPlan plan_conv(cudnnHandle_t handle, const std::string& layer, const ConvShape& shape,
                   const std::string& key_prefix, const ConvScratch& scratch);

// y = conv(x, w): x N x C x H x W, w K x C x R x S (KRSC under NHWC), y N x K x OH x OW, in the
// plan's dtype and layout.
void conv2d_forward(const GpuExec& e, const ConvPlan& p, const void* x, const void* w, void* y);
// dw = the weights' gradient at x (written, the plan's dtype and filter layout); then, where the
// plan has a data gradient, dx (+)= the input's gradient by `beta` (1: a second reader's
// gradient is already there).
void conv2d_backward(const GpuExec& e, const ConvPlan& p, const void* x, const void* dy,
                     const void* w, void* dw, void* dx, float beta);

}  // namespace stoker::gpu
