// SPDX-License-Identifier: Apache-2.0
// ReLU (unless a batch norm computes it) and the residual add, forward and backward.
// Part of the planner (dnnl_plan.h).
#include "train/cpu/dnnl_plan.h"

namespace stoker::cpu::planning {

void Planner::forward_relu(size_t i, const Layer& l) {
  const int in = l.inputs[0], out = l.output;
  if (d.fused_relu[size_t(in)]) {  // done by the batch norm that wrote `in`: same memory
    d.md[size_t(out)] = d.md[size_t(in)];
    d.act[size_t(out)] = d.act[size_t(in)];
    return;
  }
  const auto pd = STOKER_DNNL(dnnl::eltwise_forward::primitive_desc(
      d.engine, prop_kind::forward_training, algorithm::eltwise_relu, d.md[in], d.md[in], 0.f, 0.f,
      attr));
  set_output(out, pd.dst_desc());
  d.layers[i].relu_fwd = pd;
  const auto prim = STOKER_DNNL(dnnl::eltwise_forward(pd));
  for (auto* program : {&d.forward_train, &d.forward_eval})
    add(*program, l.name + " forward", pd, prim,
        {{DNNL_ARG_SRC, d.act[in]}, {DNNL_ARG_DST, d.act[out]}});
}

void Planner::backward_relu(size_t i, const Layer& l) {
  const int in = l.inputs[0], out = l.output;
  if (d.fused_relu[size_t(in)]) {  // the batch norm's backward applies the mask
    written[size_t(in)] = true;
    return;
  }
  const auto pd = STOKER_DNNL(
      dnnl::eltwise_backward::primitive_desc(d.engine, algorithm::eltwise_relu, d.md[in], d.md[out],
                                             d.md[in], 0.f, 0.f, d.layers[i].relu_fwd, attr));
  const memory target = gradient_target(in);
  add(d.backward, l.name + " backward", pd, STOKER_DNNL(dnnl::eltwise_backward(pd)),
      {{DNNL_ARG_SRC, d.act[in]}, {DNNL_ARG_DIFF_DST, d.dact[out]}, {DNNL_ARG_DIFF_SRC, target}});
  gradient_written(in, target, l.name);
}

void Planner::forward_add(const Layer& l) {
  const int a = l.inputs[0], b = l.inputs[1], out = l.output;
  set_output(out, d.md[a]);
  for (auto* program : {&d.forward_train, &d.forward_eval})
    add_sum(*program, l.name + " forward", d.act[a], d.act[b], d.act[out]);
}

// Both inputs receive the output's gradient unchanged: a copy for the first contribution,
// an in-place sum for the second.
void Planner::backward_add(const Layer& l) {
  for (const int in : l.inputs) {
    if (in == 0) continue;
    if (find(in) == find(l.output)) {  // one memory: nothing to move
      written[size_t(in)] = true;
    } else if (!written[size_t(in)]) {
      add_reorder(d.backward, l.name + " backward", d.dact[size_t(l.output)], d.dact[size_t(in)]);
      written[size_t(in)] = true;
    } else {
      add_sum(d.backward, l.name + " backward", d.dact[size_t(in)], d.dact[size_t(l.output)],
              d.dact[size_t(in)]);
    }
  }
}

}  // namespace stoker::cpu::planning
