// SPDX-License-Identifier: Apache-2.0
// CudnnNet's layers planned: each layer's plan taken from the backend's OpPlans by its shape
// (op_shapes.h; planned there the first time a shape is asked for, shared by the layers of a
// shape and kept across reshapes), its own buffers allocated, the one workspace sized for the
// largest plan; then which ops run fused (set_fusion: cudnn_fusion.cc).
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "common/error.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/cudnn_net.h"

namespace stoker::gpu {

void CudnnNet::plan_layers() {
  layers_.resize(net_.layers.size());
  const ConvPolicy policy = cudnn_conv_policy(config_.conv_algorithm);
  const std::string key_prefix =
      fmt::format("{} cudnn{} sm{}", device_name_, cudnnGetVersion(), [] {
        // Checked: an unchecked failure would key the cache as "sm0" and share measured
        // choices between devices.
        int d = 0, major = 0, minor = 0;
        STOKER_GPU(cudaGetDevice(&d));
        STOKER_GPU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d));
        STOKER_GPU(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d));
        return major * 10 + minor;
      }());
  // Exhaustive search measures in a workspace as large as the limit allows (planning only).
  DeviceBuffer find_ws;
  // STOKER_CUDNN_ALGO_CACHE=FILE keeps measured choices across processes (read here, written
  // after planning).
  const char* cache_file = std::getenv("STOKER_CUDNN_ALGO_CACHE");
  if (policy.kind == ConvPolicy::Kind::exhaustive && cache_file && *cache_file)
    AlgoCache::process().load(cache_file);
  if (policy.kind == ConvPolicy::Kind::exhaustive) {
    size_t free = 0, total = 0;
    STOKER_GPU(cudaMemGetInfo(&free, &total));
    find_ws = DeviceBuffer(std::min(config_.workspace_limit, free / 2));
  }
  size_t workspace = 0;
  for (size_t i = 0; i < net_.layers.size(); ++i) {
    const Layer& l = net_.layers[i];
    try {
      plan_layer(l, layers_[i], key_prefix, find_ws, workspace);
    } catch (const Error& e) {
      fail("planning {} ({}): {}", l.name, kind_name(l.kind), e.what());
    }
  }
  find_ws = DeviceBuffer();
  set_fusion(fusion_);
  // conv_stats: the ReLU's mask of each batch norm the frontend runs with its ReLU (not under a
  // prologue: the reading conv takes the ReLU's gradient). A fallback only takes patterns away.
  for (const Op& op : lowering_.ops)
    if (op.stats_given && op.kind != OpKind::batchnorm && !op.apply_in_reader)
      alloc(layers_[size_t(op.layers[0])].fe_mask,
            fe_mask_bytes(tensors_[size_t(op.output)].elements));
  if (policy.kind == ConvPolicy::Kind::exhaustive && cache_file && *cache_file)
    AlgoCache::process().save(cache_file);
  alloc(workspace_, std::max(workspace, fe_workspace_));
}

std::string CudnnNet::plans_shared() const {
  // Per kind: the distinct plans, and the layers holding one.
  std::set<const void*> plans[3];
  int layers[3] = {0, 0, 0};
  const auto count = [&](int kind, const void* plan) {
    if (plan == nullptr) return;
    ++layers[kind];
    plans[kind].insert(plan);
  };
  for (const GpuLayer& g : layers_) {
    count(0, g.conv.get());
    count(1, g.bn.get());
    count(2, g.pool.get());
  }
  return fmt::format("plans {}/{} conv, {}/{} batchnorm, {}/{} pool", plans[0].size(), layers[0],
                     plans[1].size(), layers[1], plans[2].size(), layers[2]);
}

// The batch norm's plan at the net's mode; with the Ex forms' offers unless the plain calls are
// all it will make.
std::shared_ptr<const BnPlan> CudnnNet::bn_plan(const Layer& l) const {
  const BnShape shape =
      gpu::bn_shape(shapes_[size_t(l.inputs[0])], config_,
                    bn_mode_ == CUDNN_BATCHNORM_SPATIAL_PERSISTENT, fusion_ != kFusePlain);
  return plans_->batchnorm.get(bn_plan_key(shape), [&] { return plan_batchnorm(cudnn_, shape); });
}

void CudnnNet::plan_layer(const Layer& l, GpuLayer& g, const std::string& key_prefix,
                          const DeviceBuffer& find_ws, size_t& workspace) {
  const int64_t n = config_.batch;
  const ActShape& in = shapes_[size_t(l.inputs[0])];
  const ActShape& out = shapes_[size_t(l.output)];
  switch (l.kind) {
    case LayerKind::conv: {
      const ConvShape shape = conv_shape(l, in, out, config_);
      const GpuParam& w = params_[size_t(l.weight)];
      // The first layer of a shape plans it: an exhaustive search runs in that layer's buffers.
      const ConvScratch scratch{tensors_[size_t(l.inputs[0])].act,
                                w.compute,
                                tensors_[size_t(l.output)].act,
                                tensors_[size_t(l.inputs[0])].dact,
                                w.raw,
                                find_ws.get(),
                                find_ws.bytes()};
      g.conv = plans_->conv.get(conv_plan_key(shape), [&] {
        return std::make_shared<const ConvPlan>(
            plan_conv(cudnn_, l.name, shape, key_prefix, scratch));
      });
      for (size_t b : g.conv->workspace) workspace = std::max(workspace, b);
      for (ConvChoice c : g.conv->choices) {  // the plan's choices, named for this layer
        c.layer = l.name;
        choices_.push_back(std::move(c));
      }
      return;
    }
    case LayerKind::batchnorm:
      g.bn = bn_plan(l);
      alloc(g.save_mean, size_t(in.c) * sizeof(float));
      alloc(g.save_invvar, size_t(in.c) * sizeof(float));
      if (g.bn->offers_ex) alloc(g.reserve, std::max<size_t>(g.bn->reserve, 1));
      workspace = std::max(workspace, g.bn->workspace);
      if (fusion_ >= kFuseStats) alloc(g.fe_stats, 6 * size_t(in.c) * sizeof(float));
      return;
    case LayerKind::maxpool:
    case LayerKind::global_avgpool: {
      const PoolShape shape = pool_shape(l, in, out, config_);
      g.pool = plans_->pool.get(pool_plan_key(shape), [&] { return plan_pool(shape); });
      if (shape.max) alloc(g.pool_offsets, g.pool->offsets_bytes);
      return;
    }
    case LayerKind::fc:
      g.linear = {.n = int(n),
                  .in = int(in.elements()),
                  .out = l.out_channels,
                  .dtype = dtype_,
                  .precision = config_.precision};
      return;
    default:
      return;
  }
}

}  // namespace stoker::gpu
