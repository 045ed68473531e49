// SPDX-License-Identifier: Apache-2.0
// The convolution planning of the GPU backend: the descriptors of one convolution (tensors,
// filter, one convolution descriptor per pass carrying the math type cuDNN ranked that pass's
// algorithm with; owning handles, handles.h) and the algorithm of each pass chosen by the policy
// (heuristic: cuDNN's first ranked choice within the workspace limit; exhaustive: measured by
// cudnnFind*Ex once per key, process-wide cache; fixed:<name>: that algorithm where cuDNN supports
// it within the limit, else the heuristic, said in the choice). Runs nothing per step: cudnn_net.cc
// calls the convolutions.
#pragma once

#include <cudnn.h>

#include <array>
#include <cstddef>
#include <memory>
#include <string>

#include "train/backend.h"
#include "train/gpu/algo_cache.h"
#include "train/gpu/handles.h"
#include "train/gpu/kernels/kernels.h"

namespace stoker::gpu {

cudnnDataType_t cudnn_dtype(DType t);
// A 4-D tensor n x c x h x w, stored NCHW or NHWC.
TensorDesc make_tensor_desc(DType t, bool nhwc, int64_t n, int64_t c, int64_t h, int64_t w);

// One convolution layer's geometry (no bias, dilation 1, as ResNet's).
struct ConvGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t k = 0, r = 0, s = 0;         // output channels, kernel
  int64_t oh = 0, ow = 0;              // output
  int stride = 1, pad = 0, groups = 1;
};

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
// conv_math_type(precision). `key_prefix` names the device and library version (cache keys
// must not be shared across them). stoker::Error naming the layer when cuDNN offers no
// algorithm within the limit.
ConvPlan plan_conv(cudnnHandle_t handle, const std::string& layer, const ConvGeometry& g,
                   DType dtype, bool nhwc, Precision precision, bool need_bwd_data,
                   const ConvPolicy& policy, size_t workspace_limit, const std::string& key_prefix,
                   const ConvScratch& scratch);

}  // namespace stoker::gpu
