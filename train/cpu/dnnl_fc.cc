// SPDX-License-Identifier: Apache-2.0
// The fully connected layer, and the loss: log-softmax and cross-entropy with label
// smoothing as one host step.
// Part of the planner (dnnl_plan.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.h"
#include "train/cpu/dnnl_plan.h"

namespace stoker::cpu::planning {

void Planner::forward_fc(size_t i, const Layer& l) {
  const int in = l.inputs[0], out = l.output;
  const ActShape& s = d.shapes[size_t(in)];
  STOKER_CHECK_MSG(s.c == l.in_channels && l.bias_param >= 0, "{}: unexpected fc input", l.name);
  // Weights as oneDNN sees them: K x C x H x W over the (1 x 1) pooled input; torch's K x C
  // has the same bytes in plain layout.
  const memory::dims w = {l.out_channels, s.c, s.h, s.w};
  const memory::dims b = {l.out_channels};
  const memory::dims dst = {n, l.out_channels};
  const auto fwd_pd = STOKER_DNNL(dnnl::inner_product_forward::primitive_desc(
      d.engine, prop_kind::forward_training, d.md[in], memory::desc(w, d.act_type, tag::any),
      memory::desc(b, dt::f32, tag::any), memory::desc(dst, d.act_type, tag::any), attr));
  set_output(out, fwd_pd.dst_desc());
  const auto bww_pd = STOKER_DNNL(dnnl::inner_product_backward_weights::primitive_desc(
      d.engine, d.md[in], memory::desc(w, dt::f32, tag::any), memory::desc(b, dt::f32, tag::any),
      d.md[out], fwd_pd, attr));
  make_trainable(l.weight, bww_pd.diff_weights_desc(), memory::desc(w, dt::f32, tag::oihw));
  make_trainable(l.bias_param, bww_pd.diff_bias_desc(), memory::desc(b, dt::f32, tag::x));
  STOKER_CHECK_MSG(fwd_pd.bias_desc() == bww_pd.diff_bias_desc(), "{}: bias layouts differ",
                   l.name);
  LayerMemory& lm = d.layers[i];
  lm.fc_fwd = fwd_pd;
  lm.fc_bww = bww_pd;
  lm.fwd_weights = weights_for(param(l.weight).value, fwd_pd.weights_desc(), l.name,
                               {&d.forward_train, &d.forward_eval});
  const auto prim = STOKER_DNNL(dnnl::inner_product_forward(fwd_pd));
  for (auto* program : {&d.forward_train, &d.forward_eval})
    add(*program, l.name + " forward", fwd_pd, prim,
        {{DNNL_ARG_SRC, d.act[in]},
         {DNNL_ARG_WEIGHTS, lm.fwd_weights},
         {DNNL_ARG_BIAS, param(l.bias_param).value},
         {DNNL_ARG_DST, d.act[out]}});
}

void Planner::backward_fc(size_t i, const Layer& l) {
  const int in = l.inputs[0], out = l.output;
  const LayerMemory& lm = d.layers[i];
  const ActShape& s = d.shapes[size_t(in)];
  const memory::dims w = {l.out_channels, s.c, s.h, s.w};
  const auto pd = STOKER_DNNL(dnnl::inner_product_backward_data::primitive_desc(
      d.engine, d.md[in], memory::desc(w, d.act_type, tag::any), d.md[out], lm.fc_fwd, attr));
  const memory weights = pd.weights_desc() == lm.fwd_weights.get_desc()
                             ? lm.fwd_weights
                             : weights_for(param(l.weight).value, pd.weights_desc(),
                                           l.name + " backward", {&d.backward});
  const memory target = gradient_target(in);
  add(d.backward, l.name + " backward-data", pd, STOKER_DNNL(dnnl::inner_product_backward_data(pd)),
      {{DNNL_ARG_DIFF_DST, d.dact[out]}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DIFF_SRC, target}});
  gradient_written(in, target, l.name);
  add(d.backward, l.name + " backward-weights", lm.fc_bww,
      STOKER_DNNL(dnnl::inner_product_backward_weights(lm.fc_bww)),
      {{DNNL_ARG_SRC, d.act[in]},
       {DNNL_ARG_DIFF_DST, d.dact[out]},
       {DNNL_ARG_DIFF_WEIGHTS, param(l.weight).grad},
       {DNNL_ARG_DIFF_BIAS, param(l.bias_param).grad}});
}

// The logits leave in plain f32; the loss is log-softmax (oneDNN) and a sum over the batch.
void Planner::forward_loss() {
  const int last = int(d.act.size()) - 1;
  const int64_t classes = d.net.num_classes;
  const memory::desc plain({n, classes}, dt::f32, tag::nc);
  d.logits_plain = alloc(plain);
  d.logp = alloc(plain);
  d.dlogits_plain = alloc(plain);
  for (auto* program : {&d.forward_train, &d.forward_eval})
    add_reorder(*program, "logits to plain", d.act[last], d.logits_plain);
  const auto pd = STOKER_DNNL(dnnl::softmax_forward::primitive_desc(
      d.engine, prop_kind::forward_training, algorithm::softmax_log, plain, plain, 1, attr));
  add(d.forward_train, "log-softmax", pd, STOKER_DNNL(dnnl::softmax_forward(pd)),
      {{DNNL_ARG_SRC, d.logits_plain}, {DNNL_ARG_DST, d.logp}});
  // Mean over the batch of -(1 - s) log p[y] - s/K sum_k log p[k] (torch's label smoothing),
  // and its gradient (softmax - target) / N.
  const float* logp = static_cast<const float*>(handle(d.logp));
  float* dlogits = static_cast<float*>(handle(d.dlogits_plain));
  DnnlNet* net = &d;
  const int64_t batch = n;
  add_host(d.forward_train, "cross-entropy", [net, logp, dlogits, batch, classes] {
    const float s = net->config.label_smoothing;
    const float off = s / float(classes);
    double total = 0;
    for (int64_t i = 0; i < batch; ++i) {
      const float* lp = logp + i * classes;
      float* g = dlogits + i * classes;
      const int32_t y = net->labels[size_t(i)];
      double sum_lp = 0;
      for (int64_t k = 0; k < classes; ++k) {
        sum_lp += lp[k];
        const float target = (k == y ? 1.0f - s : 0.0f) + off;
        g[k] = (std::exp(lp[k]) - target) / float(batch);
      }
      total += -(1.0 - s) * lp[y] - off * sum_lp;
    }
    net->loss = float(total / double(batch));
    if (net->nonfinite_statistics) {
      net->nonfinite_statistics = false;
      net->loss = std::numeric_limits<float>::quiet_NaN();
      std::fill(dlogits, dlogits + batch * classes, net->loss);
    }
  });
}

}  // namespace stoker::cpu::planning
