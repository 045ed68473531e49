// SPDX-License-Identifier: Apache-2.0
// ReLU (unless a batch norm computes it) and the residual add, forward and backward; the add
// with its ReLU as one primitive (bn_add_relu).
// Part of the planner (dnnl_plan.h).
#include "train/cpu/dnnl_plan.h"

namespace stoker::cpu::planning {

void Planner::forward_relu(size_t i, const Layer& l) {
  const int in = l.inputs[0], out = l.output;
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

// The mask from the ReLU's input, or from its output where the input was computed over in
// place (bn_add_relu's add): relu'(s) is s > 0, which is r > 0 for r = relu(s).
void Planner::backward_relu(size_t i, const Layer& l) {
  const int in = l.inputs[0], out = l.output;
  const bool from_dst = d.lowering.hidden[size_t(in)];
  const algorithm algo =
      from_dst ? algorithm::eltwise_relu_use_dst_for_bwd : algorithm::eltwise_relu;
  const auto pd = STOKER_DNNL(dnnl::eltwise_backward::primitive_desc(
      d.engine, algo, d.md[in], d.md[out], d.md[in], 0.f, 0.f, d.layers[i].relu_fwd, attr));
  const memory target = gradient_target(in);
  add(d.backward, l.name + " backward", pd, STOKER_DNNL(dnnl::eltwise_backward(pd)),
      {{from_dst ? DNNL_ARG_DST : DNNL_ARG_SRC, d.act[from_dst ? out : in]},
       {DNNL_ARG_DIFF_DST, d.dact[out]},
       {DNNL_ARG_DIFF_SRC, target}});
  gradient_written(in, target, l.name);
}

void Planner::forward_add(const Layer& l) {
  const int a = l.inputs[0], b = l.inputs[1], out = l.output;
  set_output(out, d.md[a]);
  for (auto* program : {&d.forward_train, &d.forward_eval})
    add_sum(*program, l.name + " forward", d.act[a], d.act[b], d.act[out]);
}

// bn_add_relu after its batch norm: r = relu(y + z) as one binary primitive with a ReLU
// post-op, written over y (the backward needs neither y nor y + z: the ReLU's mask comes from
// r, the batch norm's from its input). One pass instead of the add's and the ReLU's; the
// values are the unfused ones bit for bit (rounding keeps the sign, so relu and the final
// rounding commute).
void Planner::forward_add_relu(const Op& op) {
  const Layer& a = d.net.layers[size_t(op.layers[1])];
  const size_t relu = size_t(op.layers[2]);
  const int y = a.inputs[0], z = a.inputs[1], sum = a.output, out = d.net.layers[relu].output;
  alias(y, sum);
  alias(y, out);
  dnnl::post_ops ops;
  STOKER_DNNL(ops.append_eltwise(algorithm::eltwise_relu, 0.f, 0.f));
  dnnl::primitive_attr with_relu;  // not `attr`: a copy would share (and change) it
  STOKER_DNNL(with_relu.set_scratchpad_mode(dnnl::scratchpad_mode::user));
  STOKER_DNNL(with_relu.set_post_ops(ops));
  const auto pd = STOKER_DNNL(dnnl::binary::primitive_desc(d.engine, algorithm::binary_add, d.md[y],
                                                           d.md[z], d.md[y], with_relu));
  const auto prim = STOKER_DNNL(dnnl::binary(pd));
  for (auto* program : {&d.forward_train, &d.forward_eval})
    add(*program, a.name + " forward (+relu)", pd, prim,
        {{DNNL_ARG_SRC_0, d.act[y]}, {DNNL_ARG_SRC_1, d.act[z]}, {DNNL_ARG_DST, d.act[out]}});
  // The backward's hint: a ReLU whose mask comes from its output.
  d.layers[relu].relu_fwd = STOKER_DNNL(dnnl::eltwise_forward::primitive_desc(
      d.engine, prop_kind::forward_training, algorithm::eltwise_relu_use_dst_for_bwd, d.md[y],
      d.md[y], 0.f, 0.f, attr));
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
