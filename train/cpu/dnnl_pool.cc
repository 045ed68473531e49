// SPDX-License-Identifier: Apache-2.0
// Max pooling (with its workspace) and global average pooling, forward and backward.
// Part of the planner (dnnl_plan.h).
#include "train/cpu/dnnl_plan.h"

namespace stoker::cpu::planning {

// oneDNN counts dilation from 0: no gap between the window's elements.
const memory::dims kNoDilation = {0, 0};

Planner::PoolGeometry Planner::pool_geometry(const Layer& l) const {
  if (l.kind == LayerKind::maxpool)
    return {
        algorithm::pooling_max, {l.kernel, l.kernel}, {l.stride, l.stride}, {l.padding, l.padding}};
  const ActShape& s = d.shapes[size_t(l.inputs[0])];
  return {algorithm::pooling_avg_exclude_padding, {s.h, s.w}, {1, 1}, {0, 0}};
}

void Planner::forward_pool(size_t i, const Layer& l) {
  const int in = l.inputs[0], out = l.output;
  const PoolGeometry g = pool_geometry(l);
  const bool max = g.algo == algorithm::pooling_max;
  const auto pd = STOKER_DNNL(
      dnnl::pooling_forward::primitive_desc(d.engine, prop_kind::forward_training, g.algo, d.md[in],
                                            memory::desc(dims(out), d.act_type, tag::any),
                                            g.strides, g.kernel, kNoDilation, g.pad, g.pad, attr));
  set_output(out, pd.dst_desc());
  LayerMemory& lm = d.layers[i];
  lm.pool_fwd = pd;
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, d.act[in]}, {DNNL_ARG_DST, d.act[out]}};
  if (max) {
    lm.workspace = alloc(pd.workspace_desc());
    args[DNNL_ARG_WORKSPACE] = lm.workspace;
  }
  const auto prim = STOKER_DNNL(dnnl::pooling_forward(pd));
  for (auto* program : {&d.forward_train, &d.forward_eval})
    add(*program, l.name + " forward", pd, prim, args);
}

void Planner::backward_pool(size_t i, const Layer& l) {
  const int in = l.inputs[0], out = l.output;
  const LayerMemory& lm = d.layers[i];
  const PoolGeometry g = pool_geometry(l);
  const bool max = g.algo == algorithm::pooling_max;
  const auto pd = STOKER_DNNL(dnnl::pooling_backward::primitive_desc(
      d.engine, g.algo, d.md[in], d.md[out], g.strides, g.kernel, kNoDilation, g.pad, g.pad,
      lm.pool_fwd, attr));
  const memory target = gradient_target(in);
  std::unordered_map<int, memory> args = {{DNNL_ARG_DIFF_DST, d.dact[out]},
                                          {DNNL_ARG_DIFF_SRC, target}};
  if (max) args[DNNL_ARG_WORKSPACE] = lm.workspace;
  add(d.backward, l.name + " backward", pd, STOKER_DNNL(dnnl::pooling_backward(pd)), args);
  gradient_written(in, target, l.name);
}

}  // namespace stoker::cpu::planning
