// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/op_shapes.h"

#include <fmt/format.h>

#include "train/gpu/gpu_policy.h"

namespace stoker::gpu {
namespace {

const char* layout(bool nhwc) {
  return nhwc ? "nhwc" : "nchw";
}

}  // namespace

ConvShape conv_shape(const Layer& l, const ActShape& in, const ActShape& out,
                     const BackendConfig& config) {
  return {.g = {config.batch, in.c, in.h, in.w, out.c, l.kernel, l.kernel, out.h, out.w, l.stride,
                l.padding, l.groups},
          .dtype = compute_dtype(config.precision),
          .nhwc = compute_nhwc(config),
          .precision = config.precision,
          .need_bwd_data = l.inputs[0] != 0,  // tensor 0: the images
          .policy = cudnn_conv_policy(config.conv_algorithm),
          .workspace_limit = config.workspace_limit};
}

BnShape bn_shape(const ActShape& in, const BackendConfig& config, bool persistent, bool ex) {
  return {.n = config.batch,
          .c = in.c,
          .h = in.h,
          .w = in.w,
          .dtype = compute_dtype(config.precision),
          .nhwc = compute_nhwc(config),
          .persistent = persistent,
          .ex = ex};
}

PoolShape pool_shape(const Layer& l, const ActShape& in, const ActShape& out,
                     const BackendConfig& config) {
  const bool max = l.kind == LayerKind::maxpool;
  return {.max = max,
          .n = config.batch,
          .c = in.c,
          .h = in.h,
          .w = in.w,
          .oh = out.h,
          .ow = out.w,
          .k = max ? l.kernel : 1,  // global: the whole image
          .stride = max ? l.stride : 1,
          .pad = max ? l.padding : 0,
          .dtype = compute_dtype(config.precision),
          .nhwc = compute_nhwc(config)};
}

std::string conv_plan_key(const ConvShape& s) {
  const ConvGeometry& g = s.g;
  return fmt::format(
      "conv n{} c{} h{} w{} k{} r{} s{} oh{} ow{} st{} p{} g{} {} {} tf{} data_grad{} {} ws{}", g.n,
      g.c, g.h, g.w, g.k, g.r, g.s, g.oh, g.ow, g.stride, g.pad, g.groups, dtype_name(s.dtype),
      layout(s.nhwc), int(s.precision == Precision::tf32), int(s.need_bwd_data),
      conv_algorithm_name(s.policy), s.workspace_limit);
}

std::string bn_plan_key(const BnShape& s) {
  return fmt::format("batchnorm n{} c{} h{} w{} {} {} {} ex{}", s.n, s.c, s.h, s.w,
                     dtype_name(s.dtype), layout(s.nhwc), s.persistent ? "persistent" : "spatial",
                     int(s.ex));
}

std::string pool_plan_key(const PoolShape& s) {
  return fmt::format("{} n{} c{} h{} w{} oh{} ow{} k{} st{} p{} {} {}",
                     s.max ? "maxpool" : "global_avgpool", s.n, s.c, s.h, s.w, s.oh, s.ow, s.k,
                     s.stride, s.pad, dtype_name(s.dtype), layout(s.nhwc));
}

}  // namespace stoker::gpu
