// SPDX-License-Identifier: Apache-2.0
// cudnn_fe_graphs.h on the cuDNN frontend's graph API (header-only, PyPI's
// nvidia-cudnn-frontend): each graph (cudnn_fe_build.h) planned once, cached by a key naming
// every shape and constant it bakes in; execution binds buffers by tensor uid; the deviceless
// planning of the same graphs.
#include "train/gpu/cudnn_fe_graphs.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/error.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/cudnn_fe_build.h"
#include "train/gpu/plan_cache.h"

namespace stoker::gpu {

namespace fe = cudnn_frontend;
using namespace fe_build;  // NOLINT: this file is the builders' one user

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

// Every graph of an instance planned for `device`: empty, or the first refusal.
template <class Which, class Shape>
std::string planned_for(const FeDevice& device, const std::vector<Which>& graphs,
                        const char* const names[], const Shape& s,
                        std::shared_ptr<Built> (*build)(Which, const Shape&)) {
  for (const Which which : graphs)
    if (const auto b = finish(build(which, s), nullptr, &device); !b->supported)
      return fmt::format("{}: {}", names[int(which)], b->why);
  return {};
}

}  // namespace

std::string fe_plan_conv_stats_for(const FeDevice& device, const FeConvShape& conv) {
  return planned_for(device, conv_graphs(conv), kConvGraphName, conv, build_conv);
}

std::string fe_plan_batchnorm_for(const FeDevice& device, const FeBnShape& bn) {
  return planned_for(device, bn_graphs(bn), kBnGraphName, bn, build_bn);
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

namespace {

// An instance's graphs by ConvGraph or BnGraph (null where it does not run that one), for its
// shape.
template <class Shape, class Which>
struct GraphSet {
  Shape shape;
  const char* const* names = nullptr;  // kConvGraphName, kBnGraphName
  std::shared_ptr<const Built> graph[3];
  const Built& operator[](Which g) const {
    STOKER_CHECK_MSG(graph[int(g)], "the plan has no {} graph", names[int(g)]);
    return *graph[int(g)];
  }
};

// Every graph the instance runs, planned (or found in the cache), the workspace raised; null
// with the first refusal in `why`.
template <class Plan, class Which, class Shape>
std::shared_ptr<const Plan> plan_graphs(FeGraphs& graphs, cudnnHandle_t handle, const Shape& s,
                                        const std::vector<Which>& which, const char* const names[],
                                        std::shared_ptr<Built> (*graph)(FeGraphs&, cudnnHandle_t,
                                                                        Which, const Shape&),
                                        size_t& workspace, std::string& why) {
  auto plan = std::make_shared<Plan>();
  plan->shape = s;
  plan->names = names;
  for (const Which w : which) {
    auto b = graph(graphs, handle, w, s);
    if (!supported(*b, workspace, why)) return nullptr;
    plan->graph[int(w)] = std::move(b);
  }
  return plan;
}

}  // namespace

struct FeConvPlan : GraphSet<FeConvShape, ConvGraph> {};
struct FeBnPlan : GraphSet<FeBnShape, BnGraph> {};

std::shared_ptr<const FeConvPlan> fe_plan_conv_stats(FeGraphs& graphs, cudnnHandle_t handle,
                                                     const FeConvShape& conv, size_t& workspace,
                                                     std::string& why) {
  return plan_graphs<FeConvPlan>(graphs, handle, conv, conv_graphs(conv), kConvGraphName,
                                 conv_graph, workspace, why);
}

std::shared_ptr<const FeBnPlan> fe_plan_batchnorm(FeGraphs& graphs, cudnnHandle_t handle,
                                                  const FeBnShape& bn, size_t& workspace,
                                                  std::string& why) {
  if (bn.add && !bn.relu) {  // no op of the lowering: its dz would be dy itself
    why = "a batch norm with the add and no ReLU is not a pattern here";
    return nullptr;
  }
  return plan_graphs<FeBnPlan>(graphs, handle, bn, bn_graphs(bn), kBnGraphName, bn_graph, workspace,
                               why);
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

void conv2d_forward_with_stats(const FeConvPlan& plan, cudnnHandle_t handle, const void* x,
                               const void* w, const FePrologue& prologue, void* y,
                               const FeBnStats& stats, void* workspace, size_t workspace_bytes) {
  std::unordered_map<int64_t, void*> pack = {{kX, const_cast<void*>(x)},
                                             {kW, const_cast<void*>(w)},
                                             {kY, y},
                                             {kSum, stats.sum},
                                             {kSqSum, stats.sq_sum}};
  add_prologue(pack, plan.shape, prologue);
  run(plan[ConvGraph::forward], handle, std::move(pack), workspace, workspace_bytes);
}

void conv2d_backward_data_relu(const FeConvPlan& plan, cudnnHandle_t handle, const void* dy,
                               const void* w, const void* x, const FePrologue& prologue, void* dx,
                               void* workspace, size_t workspace_bytes) {
  STOKER_CHECK(plan.shape.prologue);
  std::unordered_map<int64_t, void*> pack = {{kDy, const_cast<void*>(dy)},
                                             {kW, const_cast<void*>(w)},
                                             {kX, const_cast<void*>(x)},
                                             {kDx, dx}};
  add_prologue(pack, plan.shape, prologue);
  run(plan[ConvGraph::backward_data], handle, std::move(pack), workspace, workspace_bytes);
}

void conv2d_backward_weights_prologue(const FeConvPlan& plan, cudnnHandle_t handle, const void* dy,
                                      const void* x, const FePrologue& prologue, void* dw,
                                      void* workspace, size_t workspace_bytes) {
  STOKER_CHECK(plan.shape.prologue);
  std::unordered_map<int64_t, void*> pack = {
      {kDy, const_cast<void*>(dy)}, {kX, const_cast<void*>(x)}, {kDw, dw}};
  add_prologue(pack, plan.shape, prologue);
  run(plan[ConvGraph::backward_weights], handle, std::move(pack), workspace, workspace_bytes);
}

void batchnorm_forward_train(const FeBnPlan& plan, cudnnHandle_t handle, cudaStream_t stream,
                             const FeBnForward& a, const FeBnStats& stats, void* workspace,
                             size_t workspace_bytes) {
  const FeBnShape& bn = plan.shape;
  run(plan[BnGraph::finalize], handle,
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
  run(plan[BnGraph::apply], handle, std::move(pack), workspace, workspace_bytes);
}

void batchnorm_backward(const FeBnPlan& plan, cudnnHandle_t handle, const FeBnBackward& a,
                        void* workspace, size_t workspace_bytes) {
  const FeBnShape& bn = plan.shape;
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
  run(plan[BnGraph::backward], handle, std::move(pack), workspace, workspace_bytes);
}

}  // namespace stoker::gpu
