// SPDX-License-Identifier: Apache-2.0
// cudnn_fe_graphs.h on the cuDNN frontend's graph API (header-only, PyPI's
// nvidia-cudnn-frontend): one builder per graph, cached by a key naming every shape and
// constant the graph bakes in; execution binds buffers by tensor uid.
#include "train/gpu/cudnn_fe_graphs.h"

#include <cudnn_frontend.h>
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/error.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/plan_cache.h"

namespace stoker::gpu {

namespace fe = cudnn_frontend;
using Attr = fe::graph::Tensor_attributes;

namespace {

// A built graph, or why cuDNN refused it; `key` names it in messages.
struct Built {
  std::string key;
  fe::graph::Graph graph;
  int64_t workspace = 0;
  bool supported = false;
  std::string why;
};

// Tensor uids, the keys of the variant pack.
enum Uid : int64_t {
  kX = 1,
  kW,
  kY,
  kZ,
  kSum,
  kSqSum,
  kGamma,
  kBeta,
  kEqScale,
  kEqBias,
  kPrevMean,
  kPrevVar,
  kNextMean,
  kNextVar,
  kMean,
  kInvVar,
  kDy,
  kDx,
  kDz,
  kDgamma,
  kDbeta,
  kMask,
  kPScale,  // a prologue's scale and bias (the batch norm's eq_scale, eq_bias it applies)
  kPBias,
  kDw,
};

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

}  // namespace

// A GPU that graphs are planned for without being there (fe_device_from_json).
struct FeDevice {
  std::shared_ptr<fe::DeviceProperties> properties;
  int sm_version = 0;
};

namespace {

// Validates and plans the graph (heuristics, then the fallback list), sizing its workspace: on
// the handle's device, or with no device for `device` (the frontend's deviceless path: the
// same heuristics and support checks, for the GPU its properties describe; it stops there,
// since building a runtime-compiled engine's plan loads its kernels through the driver).
std::shared_ptr<Built> finish(std::shared_ptr<Built> b, cudnnHandle_t handle,
                              const FeDevice* device = nullptr) {
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

std::shared_ptr<Built> build_bn_finalize(const FeBnShape& s) {
  auto b = new_graph(DType::f32);
  fe::graph::Graph& g = b->graph;
  auto prev_mean = channel(g, kPrevMean, "running_mean", s.c);
  auto prev_var = channel(g, kPrevVar, "running_var", s.c);
  auto momentum = g.tensor(Attr(s.momentum));
  fe::graph::BN_finalize_attributes attributes;
  attributes.set_previous_running_stats(prev_mean, prev_var, momentum);
  const auto [eq_scale, eq_bias, mean, inv_var, next_mean, next_var] =
      g.bn_finalize(channel(g, kSum, "sum", s.c), channel(g, kSqSum, "sq_sum", s.c),
                    channel(g, kGamma, "gamma", s.c), channel(g, kBeta, "beta", s.c),
                    g.tensor(Attr(s.eps)), g.tensor(Attr(int64_t(s.n * s.h * s.w))), attributes);
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

enum class ConvGraph { forward, backward_data, backward_weights };
constexpr const char* kConvGraphName[] = {"conv_genstats", "conv_dgrad_relu", "conv_wgrad"};

std::shared_ptr<Built> build_conv(ConvGraph which, const FeConvShape& s) {
  return which == ConvGraph::forward         ? build_conv_genstats(s)
         : which == ConvGraph::backward_data ? build_conv_dgrad_relu(s)
                                             : build_conv_wgrad_prologue(s);
}

// The graphs a conv runs: its forward, and under a prologue its backward too (without, the
// backward is cuDNN's legacy calls, conv_cudnn.h).
std::vector<ConvGraph> conv_graphs(const FeConvShape& s) {
  if (!s.prologue) return {ConvGraph::forward};
  return {ConvGraph::forward, ConvGraph::backward_data, ConvGraph::backward_weights};
}

enum class BnGraph { finalize, apply, backward };
constexpr const char* kBnGraphName[] = {"finalize", "apply", "backward"};

// A batch norm's graphs: under a prologue the reading conv applies it.
std::vector<BnGraph> bn_graphs(const FeBnShape& s) {
  if (s.prologue) return {BnGraph::finalize, BnGraph::backward};
  return {BnGraph::finalize, BnGraph::apply, BnGraph::backward};
}

std::shared_ptr<Built> build_bn(BnGraph which, const FeBnShape& s) {
  return which == BnGraph::finalize ? build_bn_finalize(s)
         : which == BnGraph::apply  ? build_bn_apply(s)
                                    : build_bn_backward(s);
}

}  // namespace

class FeGraphs : public PlanCache<Built> {};

std::shared_ptr<FeDevice> fe_device_from_json(const std::string& json, int sm_version) {
  auto device = std::make_shared<FeDevice>();
  device->properties = std::make_shared<fe::DeviceProperties>();
  device->sm_version = sm_version;
  if (auto e = device->properties->deserialize(std::vector<uint8_t>(json.begin(), json.end()));
      e.is_bad())
    fail("cuDNN device properties (sm {}): {}", sm_version, e.get_message());
  return device;
}

std::string fe_device_json(int device) {
  fe::DeviceProperties properties;
  if (auto e = properties.set_device_id(device).build(); e.is_bad())
    fail("cuDNN device properties of device {}: {}", device, e.get_message());
  std::vector<uint8_t> json;
  if (auto e = properties.serialize(json); e.is_bad())
    fail("cuDNN device properties of device {}: serialize: {}", device, e.get_message());
  std::string text(json.begin(), json.end());
  while (!text.empty() && text.back() == '\0') text.pop_back();  // a C string's terminator
  return text;
}

namespace {

std::string planned(std::shared_ptr<Built> b, const FeDevice& device, std::string_view what) {
  b = finish(std::move(b), nullptr, &device);
  return b->supported ? std::string() : fmt::format("{}: {}", what, b->why);
}

}  // namespace

std::string fe_plan_conv_stats_for(const FeDevice& device, const FeConvShape& conv) {
  for (const ConvGraph which : conv_graphs(conv))
    if (std::string why = planned(build_conv(which, conv), device, kConvGraphName[int(which)]);
        !why.empty())
      return why;
  return {};
}

std::string fe_plan_batchnorm_for(const FeDevice& device, const FeBnShape& bn) {
  for (const BnGraph which : bn_graphs(bn))
    if (std::string why = planned(build_bn(which, bn), device, kBnGraphName[int(which)]);
        !why.empty())
      return why;
  return {};
}

bool fe_graphs_built() {
  return true;
}
std::shared_ptr<FeGraphs> make_fe_graphs() {
  return std::make_shared<FeGraphs>();
}

namespace {

// Each graph under its key, built and planned the first time it is asked for: the one place a
// key and its builder meet.
std::shared_ptr<Built> conv_graph(FeGraphs& graphs, cudnnHandle_t handle, ConvGraph which,
                                  const FeConvShape& s) {
  std::string key = fmt::format("{} n{} c{} h{} w{} k{} r{} s{} st{} p{} {} prologue{}",
                                kConvGraphName[int(which)], s.n, s.c, s.h, s.w, s.k, s.r, s.s,
                                s.stride, s.pad, dtype_name(s.dtype), s.prologue);
  return graphs.get(key, [&] {
    auto b = finish(build_conv(which, s), handle);
    b->key = key;
    return b;
  });
}

std::shared_ptr<Built> bn_graph(FeGraphs& graphs, cudnnHandle_t handle, BnGraph which,
                                const FeBnShape& s) {
  std::string key = fmt::format("bn_{} n{} c{} h{} w{} {} add{} relu{} prologue{} eps{} m{}",
                                kBnGraphName[int(which)], s.n, s.c, s.h, s.w, dtype_name(s.dtype),
                                s.add, s.relu, s.prologue, s.eps, s.momentum);
  return graphs.get(key, [&] {
    auto b = finish(build_bn(which, s), handle);
    b->key = key;
    return b;
  });
}

// A refusal in one line: its first, and the first engine's first reason after it (cuDNN lists
// every engine's reasons on lines of their own).
std::string brief(const std::string& why) {
  std::string out = why.substr(0, why.find('\n'));
  if (const size_t r = why.find("Reason: "); r != std::string::npos)
    out += "; " + why.substr(r, why.find('\n', r) - r);
  return out;
}

bool supported(const Built& b, size_t& workspace, std::string& why) {
  if (!b.supported) {
    why = fmt::format("{}: {}", b.key, brief(b.why));
    return false;
  }
  workspace = std::max(workspace, size_t(b.workspace));
  return true;
}

// Executes a graph planning found supported, on the handle's stream.
void run(const Built& b, cudnnHandle_t handle, std::unordered_map<int64_t, void*> pack,
         void* workspace, size_t workspace_bytes) {
  STOKER_CHECK_MSG(b.supported, "cuDNN frontend graph {} was not planned: {}", b.key, b.why);
  STOKER_CHECK_MSG(size_t(b.workspace) <= workspace_bytes,
                   "{}: needs {} bytes of workspace, the net planned {}", b.key, b.workspace,
                   workspace_bytes);
  if (auto e = b.graph.execute(handle, pack, workspace); e.is_bad())
    fail("{}: cuDNN frontend execute: {}", b.key, e.get_message());
}

}  // namespace

bool fe_conv_stats_supported(FeGraphs& graphs, cudnnHandle_t handle, const FeConvShape& conv,
                             size_t& workspace, std::string& why) {
  for (const ConvGraph which : conv_graphs(conv))
    if (!supported(*conv_graph(graphs, handle, which, conv), workspace, why)) return false;
  return true;
}

bool fe_batchnorm_supported(FeGraphs& graphs, cudnnHandle_t handle, const FeBnShape& bn,
                            size_t& workspace, std::string& why) {
  if (bn.add && !bn.relu) {  // no op of the lowering: its dz would be dy itself
    why = "a batch norm with the add and no ReLU is not a pattern here";
    return false;
  }
  for (const BnGraph which : bn_graphs(bn))
    if (!supported(*bn_graph(graphs, handle, which, bn), workspace, why)) return false;
  return true;
}

namespace {

// The prologue's buffers in a variant pack (conv.prologue).
void add_prologue(std::unordered_map<int64_t, void*>& pack, const FeConvShape& conv,
                  const FePrologue& prologue) {
  if (!conv.prologue) return;
  STOKER_CHECK(prologue.scale != nullptr && prologue.bias != nullptr);
  pack.emplace(kPScale, const_cast<void*>(prologue.scale));
  pack.emplace(kPBias, const_cast<void*>(prologue.bias));
}

}  // namespace

void conv2d_forward_with_stats(FeGraphs& graphs, cudnnHandle_t handle, const FeConvShape& conv,
                               const void* x, const void* w, const FePrologue& prologue, void* y,
                               const FeBnStats& stats, void* workspace, size_t workspace_bytes) {
  std::unordered_map<int64_t, void*> pack = {{kX, const_cast<void*>(x)},
                                             {kW, const_cast<void*>(w)},
                                             {kY, y},
                                             {kSum, stats.sum},
                                             {kSqSum, stats.sq_sum}};
  add_prologue(pack, conv, prologue);
  run(*conv_graph(graphs, handle, ConvGraph::forward, conv), handle, std::move(pack), workspace,
      workspace_bytes);
}

void conv2d_backward_data_relu(FeGraphs& graphs, cudnnHandle_t handle, const FeConvShape& conv,
                               const void* dy, const void* w, const void* x,
                               const FePrologue& prologue, void* dx, void* workspace,
                               size_t workspace_bytes) {
  STOKER_CHECK(conv.prologue);
  std::unordered_map<int64_t, void*> pack = {{kDy, const_cast<void*>(dy)},
                                             {kW, const_cast<void*>(w)},
                                             {kX, const_cast<void*>(x)},
                                             {kDx, dx}};
  add_prologue(pack, conv, prologue);
  run(*conv_graph(graphs, handle, ConvGraph::backward_data, conv), handle, std::move(pack),
      workspace, workspace_bytes);
}

void conv2d_backward_weights_prologue(FeGraphs& graphs, cudnnHandle_t handle,
                                      const FeConvShape& conv, const void* dy, const void* x,
                                      const FePrologue& prologue, void* dw, void* workspace,
                                      size_t workspace_bytes) {
  STOKER_CHECK(conv.prologue);
  std::unordered_map<int64_t, void*> pack = {
      {kDy, const_cast<void*>(dy)}, {kX, const_cast<void*>(x)}, {kDw, dw}};
  add_prologue(pack, conv, prologue);
  run(*conv_graph(graphs, handle, ConvGraph::backward_weights, conv), handle, std::move(pack),
      workspace, workspace_bytes);
}

void batchnorm_forward_train(FeGraphs& graphs, cudnnHandle_t handle, cudaStream_t stream,
                             const FeBnShape& bn, const FeBnForward& a, const FeBnStats& stats,
                             void* workspace, size_t workspace_bytes) {
  run(*bn_graph(graphs, handle, BnGraph::finalize, bn), handle,
      {{kSum, stats.sum},
       {kSqSum, stats.sq_sum},
       {kGamma, const_cast<float*>(a.gamma)},
       {kBeta, const_cast<float*>(a.beta)},
       {kPrevMean, a.running_mean},
       {kPrevVar, a.running_var},
       {kEqScale, stats.eq_scale},
       {kEqBias, stats.eq_bias},
       {kMean, a.save_mean},
       {kInvVar, a.save_invvar},
       {kNextMean, stats.next_mean},
       {kNextVar, stats.next_var}},
      workspace, workspace_bytes);
  // The running statistics are the graph's inputs and outputs: written apart, then copied over
  // (an in-place update is not what the graph promises).
  const size_t bytes = size_t(bn.c) * sizeof(float);
  STOKER_GPU(
      cudaMemcpyAsync(a.running_mean, stats.next_mean, bytes, cudaMemcpyDeviceToDevice, stream));
  STOKER_GPU(
      cudaMemcpyAsync(a.running_var, stats.next_var, bytes, cudaMemcpyDeviceToDevice, stream));
  if (bn.prologue) return;  // the reading conv applies it
  std::unordered_map<int64_t, void*> pack = {{kX, const_cast<void*>(a.x)},
                                             {kEqScale, stats.eq_scale},
                                             {kEqBias, stats.eq_bias},
                                             {kY, a.y}};
  if (bn.add) pack.emplace(kZ, const_cast<void*>(a.z));
  if (bn.relu) pack.emplace(kMask, a.mask);
  run(*bn_graph(graphs, handle, BnGraph::apply, bn), handle, std::move(pack), workspace,
      workspace_bytes);
}

void batchnorm_backward(FeGraphs& graphs, cudnnHandle_t handle, const FeBnShape& bn,
                        const FeBnBackward& a, void* workspace, size_t workspace_bytes) {
  std::unordered_map<int64_t, void*> pack = {{kDy, const_cast<void*>(a.dy)},
                                             {kX, const_cast<void*>(a.x)},
                                             {kGamma, const_cast<float*>(a.gamma)},
                                             {kMean, const_cast<float*>(a.save_mean)},
                                             {kInvVar, const_cast<float*>(a.save_invvar)},
                                             {kDx, a.dx},
                                             {kDgamma, a.dgamma},
                                             {kDbeta, a.dbeta}};
  if (bn.relu && !bn.prologue) pack.emplace(kMask, const_cast<void*>(a.mask));
  if (bn.relu && bn.add) pack.emplace(kDz, a.dz);
  run(*bn_graph(graphs, handle, BnGraph::backward, bn), handle, std::move(pack), workspace,
      workspace_bytes);
}

}  // namespace stoker::gpu
