// SPDX-License-Identifier: Apache-2.0
// cudnn_fe_build.h: the builders, on the cuDNN frontend's graph API (header-only, PyPI's
// nvidia-cudnn-frontend). NHWC activations, KRSC filters, f32 per-channel vectors.
#include "train/gpu/cudnn_fe_build.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>
#include <utility>

namespace stoker::gpu::fe_build {

namespace fe = cudnn_frontend;
using Attr = fe::graph::Tensor_attributes;

namespace {

fe::DataType_t fe_type(DType t) {
  switch (t) {
    case DType::f16:
      return fe::DataType_t::HALF;
    case DType::bf16:
      return fe::DataType_t::BFLOAT16;
    default:
      return fe::DataType_t::FLOAT;
  }
}

// n x c x h x w stored NHWC (channels innermost), as the net's tensors and KRSC filters are.
std::vector<int64_t> nhwc_strides(int64_t c, int64_t h, int64_t w) {
  return {c * h * w, 1, w * c, c};
}

std::shared_ptr<Attr> activation(fe::graph::Graph& g, Uid uid, const char* name, int64_t n,
                                 int64_t c, int64_t h, int64_t w) {
  return g.tensor(
      Attr().set_name(name).set_uid(uid).set_dim({n, c, h, w}).set_stride(nhwc_strides(c, h, w)));
}

// A per-channel f32 vector, 1 x c x 1 x 1.
std::shared_ptr<Attr> channel(fe::graph::Graph& g, Uid uid, const char* name, int64_t c) {
  return g.tensor(Attr()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim({1, c, 1, 1})
                      .set_stride({c, 1, c, c})
                      .set_data_type(fe::DataType_t::FLOAT));
}

// An n x c x h x w output stored NHWC, in the activations' dtype.
void mark_activation_output(const std::shared_ptr<Attr>& t, Uid uid, int64_t n, int64_t c,
                            int64_t h, int64_t w, DType dtype) {
  t->set_output(true)
      .set_uid(uid)
      .set_dim({n, c, h, w})
      .set_stride(nhwc_strides(c, h, w))
      .set_data_type(fe_type(dtype));
}

void mark_channel_output(const std::shared_ptr<Attr>& t, Uid uid, int64_t c) {
  t->set_output(true)
      .set_uid(uid)
      .set_dim({1, c, 1, 1})
      .set_stride({c, 1, c, c})
      .set_data_type(fe::DataType_t::FLOAT);
}

std::shared_ptr<Built> new_graph(DType io) {
  auto b = std::make_shared<Built>();
  b->graph.set_io_data_type(fe_type(io))
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return b;
}

// The conv's filter, k x c x r x s stored KRSC.
std::shared_ptr<Attr> filter(fe::graph::Graph& g, const FeConvShape& s) {
  return g.tensor(Attr()
                      .set_name("w")
                      .set_uid(kW)
                      .set_dim({s.k, s.c, s.r, s.s})
                      .set_stride({s.c * s.r * s.s, 1, s.s * s.c, s.c}));
}

int64_t out_h(const FeConvShape& s) {
  return (s.h + 2 * s.pad - s.r) / s.stride + 1;
}
int64_t out_w(const FeConvShape& s) {
  return (s.w + 2 * s.pad - s.s) / s.stride + 1;
}

// x * scale + bias per channel of x, scale and bias in the activations' dtype (the dtype
// cuDNN's fused prologue engines take them in): the batch norm a prologue applies, before its
// ReLU.
std::shared_ptr<Attr> scale_bias(fe::graph::Graph& g, const FeConvShape& s) {
  using fe::graph::Pointwise_attributes;
  const auto per_channel = [&](Uid uid, const char* name) {
    return g.tensor(Attr()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({1, s.c, 1, 1})
                        .set_stride({s.c, 1, s.c, s.c})
                        .set_data_type(fe_type(s.dtype)));
  };
  const auto t = g.pointwise(activation(g, kX, "x", s.n, s.c, s.h, s.w),
                             per_channel(kPScale, "prologue_scale"),
                             Pointwise_attributes().set_mode(fe::PointwiseMode_t::MUL));
  return g.pointwise(t, per_channel(kPBias, "prologue_bias"),
                     Pointwise_attributes().set_mode(fe::PointwiseMode_t::ADD));
}

// The conv's input: x, or under a prologue relu(x * scale + bias).
std::shared_ptr<Attr> conv_input(fe::graph::Graph& g, const FeConvShape& s) {
  if (!s.prologue) return activation(g, kX, "x", s.n, s.c, s.h, s.w);
  return g.pointwise(scale_bias(g, s),
                     fe::graph::Pointwise_attributes().set_mode(fe::PointwiseMode_t::RELU_FWD));
}

std::shared_ptr<Built> build_conv_genstats(const FeConvShape& s) {
  auto b = new_graph(s.dtype);
  fe::graph::Graph& g = b->graph;
  const auto y = g.conv_fprop(conv_input(g, s), filter(g, s),
                              fe::graph::Conv_fprop_attributes()
                                  .set_padding({s.pad, s.pad})
                                  .set_stride({s.stride, s.stride})
                                  .set_dilation({1, 1}));
  mark_activation_output(y, kY, s.n, s.k, out_h(s), out_w(s), s.dtype);
  const auto [sum, sq_sum] =
      g.genstats(y, fe::graph::Genstats_attributes().set_compute_data_type(fe::DataType_t::FLOAT));
  mark_channel_output(sum, kSum, s.k);
  mark_channel_output(sq_sum, kSqSum, s.k);
  return b;
}

// Under a prologue: dx = the ReLU's gradient of the data gradient, at x * scale + bias (the
// gradient at the batch norm's output, before its ReLU).
std::shared_ptr<Built> build_conv_dgrad_relu(const FeConvShape& s) {
  auto b = new_graph(s.dtype);
  fe::graph::Graph& g = b->graph;
  const auto dy = activation(g, kDy, "dy", s.n, s.k, out_h(s), out_w(s));
  const auto data = g.conv_dgrad(dy, filter(g, s),
                                 fe::graph::Conv_dgrad_attributes()
                                     .set_padding({s.pad, s.pad})
                                     .set_stride({s.stride, s.stride})
                                     .set_dilation({1, 1}));
  data->set_dim({s.n, s.c, s.h, s.w});
  const auto dx =
      g.pointwise(data, scale_bias(g, s),
                  fe::graph::Pointwise_attributes().set_mode(fe::PointwiseMode_t::RELU_BWD));
  mark_activation_output(dx, kDx, s.n, s.c, s.h, s.w, s.dtype);
  return b;
}

// Under a prologue: dw = the weights' gradient at the input relu(x * scale + bias), KRSC in the
// activations' dtype (as cuDNN's legacy call writes it).
std::shared_ptr<Built> build_conv_wgrad_prologue(const FeConvShape& s) {
  auto b = new_graph(s.dtype);
  fe::graph::Graph& g = b->graph;
  const auto dw =
      g.conv_wgrad(activation(g, kDy, "dy", s.n, s.k, out_h(s), out_w(s)), conv_input(g, s),
                   fe::graph::Conv_wgrad_attributes()
                       .set_padding({s.pad, s.pad})
                       .set_stride({s.stride, s.stride})
                       .set_dilation({1, 1}));
  dw->set_output(true)
      .set_uid(kDw)
      .set_dim({s.k, s.c, s.r, s.s})
      .set_stride({s.c * s.r * s.s, 1, s.s * s.c, s.c})
      .set_data_type(fe_type(s.dtype));
  return b;
}

// A test hook, for the GPU check's planted error (scripts/gpu_check.sh step_planted):
// STOKER_FE_PLANT=finalize_count has bn_finalize count one element fewer than the batch
// statistics hold, an error of 1 / (n h w) in the mean and variance that the conformance rows
// must catch. Unset, as everywhere but in that check, nothing changes.
namespace {

int64_t planted_count_error() {
  const char* plant = std::getenv("STOKER_FE_PLANT");
  return plant != nullptr && std::string_view(plant) == "finalize_count" ? 1 : 0;
}

}  // namespace

std::shared_ptr<Built> build_bn_finalize(const FeBnShape& s) {
  auto b = new_graph(DType::f32);
  fe::graph::Graph& g = b->graph;
  auto prev_mean = channel(g, kPrevMean, "running_mean", s.c);
  auto prev_var = channel(g, kPrevVar, "running_var", s.c);
  auto momentum = g.tensor(Attr(s.momentum));
  fe::graph::BN_finalize_attributes attributes;
  attributes.set_previous_running_stats(prev_mean, prev_var, momentum);
  const auto [eq_scale, eq_bias, mean, inv_var, next_mean, next_var] = g.bn_finalize(
      channel(g, kSum, "sum", s.c), channel(g, kSqSum, "sq_sum", s.c),
      channel(g, kGamma, "gamma", s.c), channel(g, kBeta, "beta", s.c), g.tensor(Attr(s.eps)),
      g.tensor(Attr(int64_t(s.n * s.h * s.w) - planted_count_error())), attributes);
  mark_channel_output(eq_scale, kEqScale, s.c);
  mark_channel_output(eq_bias, kEqBias, s.c);
  if (s.prologue) {  // for the reading conv's prologue, in the activations' dtype
    eq_scale->set_data_type(fe_type(s.dtype));
    eq_bias->set_data_type(fe_type(s.dtype));
  }
  mark_channel_output(mean, kMean, s.c);
  mark_channel_output(inv_var, kInvVar, s.c);
  mark_channel_output(next_mean, kNextMean, s.c);
  mark_channel_output(next_var, kNextVar, s.c);
  return b;
}

std::shared_ptr<Built> build_bn_apply(const FeBnShape& s) {
  using fe::graph::Pointwise_attributes;
  auto b = new_graph(s.dtype);
  fe::graph::Graph& g = b->graph;
  auto y =
      g.pointwise(activation(g, kX, "x", s.n, s.c, s.h, s.w), channel(g, kEqScale, "eq_scale", s.c),
                  Pointwise_attributes().set_mode(fe::PointwiseMode_t::MUL));
  y = g.pointwise(y, channel(g, kEqBias, "eq_bias", s.c),
                  Pointwise_attributes().set_mode(fe::PointwiseMode_t::ADD));
  if (s.add)
    y = g.pointwise(y, activation(g, kZ, "z", s.n, s.c, s.h, s.w),
                    Pointwise_attributes().set_mode(fe::PointwiseMode_t::ADD));
  if (s.relu) {
    // The ReLU's mask for the backward, one bit an element (cuDNN's batch-norm backward takes
    // the ReLU's gradient as dy times a boolean mask, not as RELU_BWD of y).
    const auto mask = g.pointwise(y, g.tensor(Attr(0.0f)),
                                  Pointwise_attributes().set_mode(fe::PointwiseMode_t::CMP_GT));
    mask->set_output(true)
        .set_uid(kMask)
        .set_dim({s.n, s.c, s.h, s.w})
        .set_stride(nhwc_strides(s.c, s.h, s.w))
        .set_data_type(fe::DataType_t::BOOLEAN);
    y = g.pointwise(y, Pointwise_attributes().set_mode(fe::PointwiseMode_t::RELU_FWD));
  }
  mark_activation_output(y, kY, s.n, s.c, s.h, s.w, s.dtype);
  return b;
}

std::shared_ptr<Built> build_bn_backward(const FeBnShape& s) {
  auto b = new_graph(s.dtype);
  fe::graph::Graph& g = b->graph;
  auto dy = activation(g, kDy, "dy", s.n, s.c, s.h, s.w);
  if (s.relu && !s.prologue) {  // under a prologue, the conv applied the ReLU's gradient
    const auto mask = g.tensor(Attr()
                                   .set_name("mask")
                                   .set_uid(kMask)
                                   .set_dim({s.n, s.c, s.h, s.w})
                                   .set_stride(nhwc_strides(s.c, s.h, s.w))
                                   .set_data_type(fe::DataType_t::BOOLEAN));
    dy =
        g.pointwise(dy, mask, fe::graph::Pointwise_attributes().set_mode(fe::PointwiseMode_t::MUL));
    // The ReLU's gradient, in the activations' dtype even where it stays virtual (cuDNN's
    // batch-norm backward takes an f32 intermediate here only for fp8 gradients); the
    // shortcut's gradient under the add (the add's is the ReLU's), materialised.
    dy->set_data_type(fe_type(s.dtype));
    if (s.add) mark_activation_output(dy, kDz, s.n, s.c, s.h, s.w, s.dtype);
  }
  fe::graph::Batchnorm_backward_attributes attributes;
  attributes.set_saved_mean_and_inv_variance(channel(g, kMean, "mean", s.c),
                                             channel(g, kInvVar, "inv_var", s.c));
  const auto [dx, dgamma, dbeta] = g.batchnorm_backward(
      dy, activation(g, kX, "x", s.n, s.c, s.h, s.w), channel(g, kGamma, "gamma", s.c), attributes);
  mark_activation_output(dx, kDx, s.n, s.c, s.h, s.w, s.dtype);
  mark_channel_output(dgamma, kDgamma, s.c);
  mark_channel_output(dbeta, kDbeta, s.c);
  return b;
}

}  // namespace

// Validates and plans the graph (heuristics, then the fallback list), sizing its workspace: on
// the handle's device, or with no device for `device` (the frontend's deviceless path: the
// same heuristics and support checks, for the GPU its properties describe; it stops there,
// since building a runtime-compiled engine's plan loads its kernels through the driver).
std::shared_ptr<Built> finish(std::shared_ptr<Built> b, cudnnHandle_t handle,
                              const FeDevice* device) {
  fe::graph::Graph& g = b->graph;
  const auto refused = [&](fe::error_t e, const char* step) {
    b->why = fmt::format("{}: {}", step, e.get_message());
    return b;
  };
  if (device != nullptr)
    g.set_device_properties(device->properties).set_sm_version(device->sm_version);
  if (auto e = g.validate(); e.is_bad()) return refused(e, "validate");
  if (auto e = device ? g.build_operation_graph() : g.build_operation_graph(handle); e.is_bad())
    return refused(e, "operation graph");
  if (auto e = g.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}); e.is_bad())
    return refused(e, "execution plans");
  if (auto e = g.check_support(); e.is_bad()) return refused(e, "support");
  if (device != nullptr) {
    b->supported = true;
    return b;
  }
  if (auto e = g.build_plans(); e.is_bad()) return refused(e, "build");
  if (auto e = g.get_workspace_size(b->workspace); e.is_bad()) return refused(e, "workspace");
  b->supported = true;
  return b;
}

std::shared_ptr<Built> build_conv(ConvGraph which, const FeConvShape& s) {
  return which == ConvGraph::forward         ? build_conv_genstats(s)
         : which == ConvGraph::backward_data ? build_conv_dgrad_relu(s)
                                             : build_conv_wgrad_prologue(s);
}

std::vector<ConvGraph> conv_graphs(const FeConvShape& s) {
  if (!s.prologue) return {ConvGraph::forward};
  return {ConvGraph::forward, ConvGraph::backward_data, ConvGraph::backward_weights};
}

std::vector<BnGraph> bn_graphs(const FeBnShape& s) {
  if (s.prologue) return {BnGraph::finalize, BnGraph::backward};
  return {BnGraph::finalize, BnGraph::apply, BnGraph::backward};
}

std::shared_ptr<Built> build_bn(BnGraph which, const FeBnShape& s) {
  return which == BnGraph::finalize ? build_bn_finalize(s)
         : which == BnGraph::apply  ? build_bn_apply(s)
                                    : build_bn_backward(s);
}

}  // namespace stoker::gpu::fe_build
