// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/conv_cudnn.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "common/error.h"
#include "train/gpu/cuda_check.h"

namespace stoker::gpu {
namespace {

// The first ranked result within the limit. The heuristic prefers a deterministic one (the
// same step twice gives the same bits, as the contract tests expect and reproducible runs
// want); measurement keeps the fastest, as torch's cudnn.benchmark does.
template <class Perf>
int first_fitting(const Perf* perf, int count, size_t limit, bool deterministic_first) {
  if (deterministic_first)
    for (int i = 0; i < count; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit &&
          perf[i].determinism == CUDNN_DETERMINISTIC)
        return i;
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= limit) return i;
  return -1;
}

struct Context {
  cudnnHandle_t handle;
  const ConvPlan* plan;
  const ConvScratch* scratch;
  size_t limit;
};

// Each returns {algo, workspace, ms}; `measure`: cudnnFind*Ex, else the _v7 heuristic.
AlgoEntry rank(const Context& c, ConvPass pass, bool measure) {
  const ConvPlan& p = *c.plan;
  const ConvScratch& s = *c.scratch;
  const size_t find_ws = std::min(c.limit, s.workspace_bytes);
  AlgoEntry e;
  int count = 0, i = -1;
  switch (pass) {
    case ConvPass::forward: {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      if (measure)
        STOKER_GPU(cudnnFindConvolutionForwardAlgorithmEx(
            c.handle, p.x.get(), s.x, p.w.get(), s.w, p.conv.get(), p.y.get(), s.y,
            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf, s.workspace, find_ws));
      else
        STOKER_GPU(cudnnGetConvolutionForwardAlgorithm_v7(
            c.handle, p.x.get(), p.w.get(), p.conv.get(), p.y.get(),
            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf));
      if ((i = first_fitting(perf, count, c.limit, !measure)) >= 0)
        e = {int(perf[i].algo), perf[i].memory, measure ? double(perf[i].time) : 0.0};
      break;
    }
    case ConvPass::backward_data: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      if (measure)
        STOKER_GPU(cudnnFindConvolutionBackwardDataAlgorithmEx(
            c.handle, p.w.get(), s.w, p.y.get(), s.y, p.conv.get(), p.x.get(), s.dx,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf, s.workspace, find_ws));
      else
        STOKER_GPU(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            c.handle, p.w.get(), p.y.get(), p.conv.get(), p.x.get(),
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf));
      if ((i = first_fitting(perf, count, c.limit, !measure)) >= 0)
        e = {int(perf[i].algo), perf[i].memory, measure ? double(perf[i].time) : 0.0};
      break;
    }
    case ConvPass::backward_weights: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      if (measure)
        STOKER_GPU(cudnnFindConvolutionBackwardFilterAlgorithmEx(
            c.handle, p.x.get(), s.x, p.y.get(), s.y, p.conv.get(), p.w.get(), s.dw,
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf, s.workspace, find_ws));
      else
        STOKER_GPU(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            c.handle, p.x.get(), p.y.get(), p.conv.get(), p.w.get(),
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf));
      if ((i = first_fitting(perf, count, c.limit, !measure)) >= 0)
        e = {int(perf[i].algo), perf[i].memory, measure ? double(perf[i].time) : 0.0};
      break;
    }
  }
  return e;  // algo -1: nothing fits
}

// Workspace of `algo` for this pass, or nullopt when cuDNN does not support it here.
std::optional<size_t> workspace_of(const Context& c, ConvPass pass, int algo) {
  const ConvPlan& p = *c.plan;
  size_t bytes = 0;
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  switch (pass) {
    case ConvPass::forward:
      st = cudnnGetConvolutionForwardWorkspaceSize(c.handle, p.x.get(), p.w.get(), p.conv.get(),
                                                   p.y.get(), cudnnConvolutionFwdAlgo_t(algo),
                                                   &bytes);
      break;
    case ConvPass::backward_data:
      st = cudnnGetConvolutionBackwardDataWorkspaceSize(
          c.handle, p.w.get(), p.y.get(), p.conv.get(), p.x.get(),
          cudnnConvolutionBwdDataAlgo_t(algo), &bytes);
      break;
    case ConvPass::backward_weights:
      st = cudnnGetConvolutionBackwardFilterWorkspaceSize(
          c.handle, p.x.get(), p.y.get(), p.conv.get(), p.w.get(),
          cudnnConvolutionBwdFilterAlgo_t(algo), &bytes);
      break;
  }
  if (st != CUDNN_STATUS_SUCCESS) return std::nullopt;
  return bytes;
}

}  // namespace

cudnnDataType_t cudnn_dtype(DType t) {
  switch (t) {
    case DType::f16:
      return CUDNN_DATA_HALF;
    case DType::bf16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;
  }
}

TensorDesc make_tensor_desc(DType t, bool nhwc, int64_t n, int64_t c, int64_t h, int64_t w) {
  cudnnTensorDescriptor_t d = nullptr;
  STOKER_GPU(cudnnCreateTensorDescriptor(&d));
  TensorDesc out(d);
  STOKER_GPU(cudnnSetTensor4dDescriptor(d, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                        cudnn_dtype(t), int(n), int(c), int(h), int(w)));
  return out;
}

ConvPlan plan_conv(cudnnHandle_t handle, const std::string& layer, const ConvGeometry& g,
                   DType dtype, bool nhwc, bool tf32, bool need_bwd_data, const ConvPolicy& policy,
                   size_t workspace_limit, const std::string& key_prefix,
                   const ConvScratch& scratch) {
  ConvPlan p;
  p.x = make_tensor_desc(dtype, nhwc, g.n, g.c, g.h, g.w);
  p.y = make_tensor_desc(dtype, nhwc, g.n, g.k, g.oh, g.ow);
  cudnnFilterDescriptor_t w = nullptr;
  STOKER_GPU(cudnnCreateFilterDescriptor(&w));
  p.w.reset(w);
  STOKER_GPU(cudnnSetFilter4dDescriptor(w, cudnn_dtype(dtype),
                                        nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, int(g.k),
                                        int(g.c / g.groups), int(g.r), int(g.s)));
  cudnnConvolutionDescriptor_t conv = nullptr;
  STOKER_GPU(cudnnCreateConvolutionDescriptor(&conv));
  p.conv.reset(conv);
  // Accumulate in f32 for every data type (cuDNN's PSEUDO_HALF / PSEUDO_BFLOAT16 configs).
  STOKER_GPU(cudnnSetConvolution2dDescriptor(conv, g.pad, g.pad, g.stride, g.stride, 1, 1,
                                             CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  STOKER_GPU(cudnnSetConvolutionGroupCount(conv, g.groups));
  // f32: FMA only (cuDNN would otherwise use TF32 tensor cores on Ampere and later).
  const cudnnMathType_t math = dtype != DType::f32 ? CUDNN_TENSOR_OP_MATH
                               : tf32              ? CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
                                                   : CUDNN_FMA_MATH;
  STOKER_GPU(cudnnSetConvolutionMathType(conv, math));
  p.has_bwd_data = need_bwd_data;

  const Context ctx{handle, &p, &scratch, workspace_limit};
  const std::string_view dtype_name = dtype == DType::f16    ? "f16"
                                      : dtype == DType::bf16 ? "bf16"
                                                             : "f32";
  for (ConvPass pass : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights}) {
    if (pass == ConvPass::backward_data && !need_bwd_data) continue;
    AlgoEntry e;
    std::string note;
    if (policy.kind == ConvPolicy::Kind::fixed) {
      const int algo = algo_from_name(pass, policy.fixed);
      const std::optional<size_t> ws = algo >= 0 ? workspace_of(ctx, pass, algo) : std::nullopt;
      if (ws && *ws <= workspace_limit)
        e = {algo, *ws, 0.0};
      else
        note = fmt::format(" (fixed:{} {} here; heuristic)", policy.fixed,
                           algo < 0 ? "does not exist for this pass"
                           : ws     ? "exceeds the workspace limit"
                                    : "is not supported");
    }
    if (e.algo < 0 && policy.kind == ConvPolicy::Kind::exhaustive) {
      const ConvKey key{.pass = pass,
                        .n = g.n,
                        .c = g.c,
                        .h = g.h,
                        .w = g.w,
                        .k = g.k,
                        .r = g.r,
                        .s = g.s,
                        .stride = g.stride,
                        .pad = g.pad,
                        .dilation = 1,
                        .groups = g.groups,
                        .dtype = dtype_name,
                        .layout = nhwc ? "nhwc" : "nchw",
                        .tf32 = tf32,
                        .workspace_limit = workspace_limit};
      const std::string text = key_prefix + " " + conv_key(key);
      if (auto hit = AlgoCache::process().find(text)) {
        e = *hit;
      } else {
        e = rank(ctx, pass, true);
        if (e.algo >= 0) AlgoCache::process().put(text, e);
      }
    }
    if (e.algo < 0) e = rank(ctx, pass, false);
    if (e.algo < 0)
      fail(
          "{}: cuDNN has no {} algorithm for {}x{}x{}x{} -> {} channels ({}x{}, stride {}) "
          "within the workspace limit of {} bytes",
          layer, pass_name(pass), g.n, g.c, g.h, g.w, g.k, g.r, g.s, g.stride, workspace_limit);
    p.workspace[size_t(pass)] = e.workspace_bytes;
    switch (pass) {
      case ConvPass::forward:
        p.fwd = cudnnConvolutionFwdAlgo_t(e.algo);
        break;
      case ConvPass::backward_data:
        p.bwd_data = cudnnConvolutionBwdDataAlgo_t(e.algo);
        break;
      case ConvPass::backward_weights:
        p.bwd_filter = cudnnConvolutionBwdFilterAlgo_t(e.algo);
        break;
    }
    p.choices.push_back(ConvChoice{layer, std::string(pass_name(pass)),
                                   algo_name(pass, e.algo) + note, e.workspace_bytes,
                                   e.measured_ms});
  }
  return p;
}

}  // namespace stoker::gpu
