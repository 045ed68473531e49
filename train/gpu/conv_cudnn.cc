// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/conv_cudnn.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "common/error.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/gpu_policy.h"

namespace stoker::gpu {
namespace {

// The first ranked result within the limit whose math type the precision allows. The
// heuristic prefers a deterministic one (the same step twice gives the same bits, as the
// contract tests expect and reproducible runs want); measurement keeps the fastest, as
// torch's cudnn.benchmark does.
template <class Perf>
int first_fitting(const Perf* perf, int count, size_t limit, cudnnMathType_t planned,
                  bool deterministic_first) {
  const auto fits = [&](const Perf& p) {
    return p.status == CUDNN_STATUS_SUCCESS && p.memory <= limit &&
           math_type_allowed(planned, p.mathType);
  };
  if (deterministic_first)
    for (int i = 0; i < count; ++i)
      if (fits(perf[i]) && perf[i].determinism == CUDNN_DETERMINISTIC) return i;
  for (int i = 0; i < count; ++i)
    if (fits(perf[i])) return i;
  return -1;
}

struct Context {
  cudnnHandle_t handle;
  const ConvPlan* plan;
  const ConvScratch* scratch;
  size_t limit;
  cudnnMathType_t planned;
};

template <class Perf>
AlgoEntry entry_of(const Perf& p, bool measured) {
  return {int(p.algo), p.memory, measured ? double(p.time) : 0.0, int(p.mathType)};
}

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
            c.handle, p.x.get(), s.x, p.w.get(), s.w, p.desc(pass), p.y.get(), s.y,
            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf, s.workspace, find_ws));
      else
        STOKER_GPU(cudnnGetConvolutionForwardAlgorithm_v7(
            c.handle, p.x.get(), p.w.get(), p.desc(pass), p.y.get(),
            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf));
      if ((i = first_fitting(perf, count, c.limit, c.planned, !measure)) >= 0)
        e = entry_of(perf[i], measure);
      break;
    }
    case ConvPass::backward_data: {
      cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      if (measure)
        STOKER_GPU(cudnnFindConvolutionBackwardDataAlgorithmEx(
            c.handle, p.w.get(), s.w, p.y.get(), s.y, p.desc(pass), p.x.get(), s.dx,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf, s.workspace, find_ws));
      else
        STOKER_GPU(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            c.handle, p.w.get(), p.y.get(), p.desc(pass), p.x.get(),
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf));
      if ((i = first_fitting(perf, count, c.limit, c.planned, !measure)) >= 0)
        e = entry_of(perf[i], measure);
      break;
    }
    case ConvPass::backward_weights: {
      cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      if (measure)
        STOKER_GPU(cudnnFindConvolutionBackwardFilterAlgorithmEx(
            c.handle, p.x.get(), s.x, p.y.get(), s.y, p.desc(pass), p.w.get(), s.dw,
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf, s.workspace, find_ws));
      else
        STOKER_GPU(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            c.handle, p.x.get(), p.y.get(), p.desc(pass), p.w.get(),
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf));
      if ((i = first_fitting(perf, count, c.limit, c.planned, !measure)) >= 0)
        e = entry_of(perf[i], measure);
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
      st = cudnnGetConvolutionForwardWorkspaceSize(c.handle, p.x.get(), p.w.get(), p.desc(pass),
                                                   p.y.get(), cudnnConvolutionFwdAlgo_t(algo),
                                                   &bytes);
      break;
    case ConvPass::backward_data:
      st = cudnnGetConvolutionBackwardDataWorkspaceSize(
          c.handle, p.w.get(), p.y.get(), p.desc(pass), p.x.get(),
          cudnnConvolutionBwdDataAlgo_t(algo), &bytes);
      break;
    case ConvPass::backward_weights:
      st = cudnnGetConvolutionBackwardFilterWorkspaceSize(
          c.handle, p.x.get(), p.y.get(), p.desc(pass), p.w.get(),
          cudnnConvolutionBwdFilterAlgo_t(algo), &bytes);
      break;
  }
  if (st != CUDNN_STATUS_SUCCESS) return std::nullopt;
  return bytes;
}

// A convolution descriptor of `g` (f32 accumulation for every data type: cuDNN's PSEUDO_HALF /
// PSEUDO_BFLOAT16 configurations) with math type `math`.
ConvDesc make_conv_desc(const ConvGeometry& g, cudnnMathType_t math) {
  cudnnConvolutionDescriptor_t conv = nullptr;
  STOKER_GPU(cudnnCreateConvolutionDescriptor(&conv));
  ConvDesc out(conv);
  STOKER_GPU(cudnnSetConvolution2dDescriptor(conv, g.pad, g.pad, g.stride, g.stride, 1, 1,
                                             CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  STOKER_GPU(cudnnSetConvolutionGroupCount(conv, g.groups));
  STOKER_GPU(cudnnSetConvolutionMathType(conv, math));
  return out;
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

ConvPlan plan_conv(cudnnHandle_t handle, const std::string& layer, const ConvShape& shape,
                   const std::string& key_prefix, const ConvScratch& scratch) {
  const ConvGeometry& g = shape.g;
  const DType dtype = shape.dtype;
  const bool nhwc = shape.nhwc;
  const Precision precision = shape.precision;
  const bool need_bwd_data = shape.need_bwd_data;
  const ConvPolicy& policy = shape.policy;
  const size_t workspace_limit = shape.workspace_limit;
  const bool tf32 = precision == Precision::tf32;
  ConvPlan p;
  p.x = make_tensor_desc(dtype, nhwc, g.n, g.c, g.h, g.w);
  p.y = make_tensor_desc(dtype, nhwc, g.n, g.k, g.oh, g.ow);
  cudnnFilterDescriptor_t w = nullptr;
  STOKER_GPU(cudnnCreateFilterDescriptor(&w));
  p.w.reset(w);
  STOKER_GPU(cudnnSetFilter4dDescriptor(w, cudnn_dtype(dtype),
                                        nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, int(g.k),
                                        int(g.c / g.groups), int(g.r), int(g.s)));
  const cudnnMathType_t planned = conv_math_type(precision);
  for (ConvDesc& d : p.conv) d = make_conv_desc(g, planned);
  p.math = {planned, planned, planned};
  p.has_bwd_data = need_bwd_data;

  const Context ctx{handle, &p, &scratch, workspace_limit, planned};
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
                        .dtype = dtype_name(dtype),
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
    // The pass runs under the math type its algorithm was ranked (and measured) with.
    if (e.math >= 0 && cudnnMathType_t(e.math) != planned) {
      if (!math_type_allowed(planned, cudnnMathType_t(e.math)))
        fail("{}: the cached {} choice has math type {}, which {} does not allow", layer,
             pass_name(pass), e.math, precision_name(precision));
      p.math[size_t(pass)] = cudnnMathType_t(e.math);
      STOKER_GPU(cudnnSetConvolutionMathType(p.conv[size_t(pass)].get(), p.math[size_t(pass)]));
    }
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

void conv2d_forward(const GpuExec& e, const ConvPlan& p, const void* x, const void* w, void* y) {
  STOKER_GPU(cudnnConvolutionForward(e.cudnn, &kOne, p.x.get(), x, p.w.get(), w,
                                     p.desc(ConvPass::forward), p.fwd, e.workspace,
                                     e.workspace_bytes, &kZero, p.y.get(), y));
}

void conv2d_backward(const GpuExec& e, const ConvPlan& p, const void* x, const void* dy,
                     const void* w, void* dw, void* dx, float beta) {
  STOKER_GPU(cudnnConvolutionBackwardFilter(e.cudnn, &kOne, p.x.get(), x, p.y.get(), dy,
                                            p.desc(ConvPass::backward_weights), p.bwd_filter,
                                            e.workspace, e.workspace_bytes, &kZero, p.w.get(), dw));
  if (p.has_bwd_data)
    STOKER_GPU(cudnnConvolutionBackwardData(e.cudnn, &kOne, p.w.get(), w, p.y.get(), dy,
                                            p.desc(ConvPass::backward_data), p.bwd_data,
                                            e.workspace, e.workspace_bytes, &beta, p.x.get(), dx));
}

}  // namespace stoker::gpu
