// SPDX-License-Identifier: Apache-2.0
// Convolution: forward, backward-data and backward-weights, the algorithm preference, and
// the master weights in the layout backward-weights writes gradients in.
// Part of the planner (dnnl_plan.h).
#include <string>
#include <utility>

#include "common/error.h"
#include "train/cpu/dnnl_plan.h"

namespace stoker::cpu::planning {

// fixed:direct: what PyTorch's oneDNN path uses; heuristic: oneDNN's choice (convolution_auto,
// which on oneDNN 3's x86 kernels is direct too: it has no Winograd there).
algorithm Planner::preferred_conv_algo() const {
  const ConvAlgorithm& a = d.config.conv_algorithm;
  return a.kind == ConvAlgorithm::Kind::heuristic ? algorithm::convolution_auto
                                                  : algorithm::convolution_direct;
}

void Planner::forward_conv(size_t i, const Layer& l) {
  STOKER_CHECK_MSG(l.groups == 1 && !l.bias, "{}: grouped or biased conv is not planned", l.name);
  const int in = l.inputs[0], out = l.output;
  const memory::dims w = {l.out_channels, l.in_channels, l.kernel, l.kernel};
  const memory::dims strides = {l.stride, l.stride}, pad = {l.padding, l.padding};
  const memory::desc src = in == 0 ? memory::desc(dims(in), d.act_type, tag::any) : d.md[in];
  // The preferred algorithm where oneDNN has it for this shape, else direct.
  const auto plan = [&](algorithm algo) {
    auto fwd = STOKER_DNNL(dnnl::convolution_forward::primitive_desc(
        d.engine, prop_kind::forward_training, algo, src, memory::desc(w, d.act_type, tag::any),
        memory::desc(dims(out), d.act_type, tag::any), strides, pad, pad, attr));
    // The master weights take the layout backward-weights writes gradients in (f32).
    const auto backward_weights = [&](const memory::desc& x, const memory::desc& dy) {
      return STOKER_DNNL(dnnl::convolution_backward_weights::primitive_desc(
          d.engine, algo, x, memory::desc(w, dt::f32, tag::any), dy, strides, pad, pad, fwd, attr));
    };
    auto bww = backward_weights(fwd.src_desc(), fwd.dst_desc());
    // Where oneDNN has no JIT backward-weights for the forward's blocked layouts (2.6 below
    // AVX-512, where the input is smaller than the kernel: layer4's 3x3 convs on small
    // images), its reference kernel takes seconds: let it pick the layouts (reordered into
    // in backward_conv) when that finds a JIT kernel.
    if (std::string(STOKER_DNNL(bww.impl_info_str())).rfind("ref", 0) == 0) {
      auto own = backward_weights(memory::desc(fwd.src_desc().get_dims(), d.act_type, tag::any),
                                  memory::desc(fwd.dst_desc().get_dims(), d.act_type, tag::any));
      if (std::string(STOKER_DNNL(own.impl_info_str())).rfind("ref", 0) != 0) bww = own;
    }
    return std::pair(fwd, bww);
  };
  LayerMemory& lm = d.layers[i];
  lm.conv_algo = preferred_conv_algo();
  std::pair<dnnl::convolution_forward::primitive_desc,
            dnnl::convolution_backward_weights::primitive_desc>
      pds;
  try {
    pds = plan(lm.conv_algo);
  } catch (const Error&) {
    if (lm.conv_algo == algorithm::convolution_direct) throw;
    lm.conv_algo = algorithm::convolution_direct;
    pds = plan(lm.conv_algo);
  }
  const auto& [fwd_pd, bww_pd] = pds;
  if (in == 0) set_output(0, fwd_pd.src_desc());
  set_output(out, fwd_pd.dst_desc());
  make_trainable(l.weight, bww_pd.diff_weights_desc(), memory::desc(w, dt::f32, tag::oihw));
  lm.conv_fwd = fwd_pd;
  lm.conv_bww = bww_pd;
  lm.fwd_weights = weights_for(param(l.weight).value, fwd_pd.weights_desc(), l.name,
                               {&d.forward_train, &d.forward_eval});
  const auto prim = STOKER_DNNL(dnnl::convolution_forward(fwd_pd));
  for (auto* program : {&d.forward_train, &d.forward_eval}) {
    add(*program, l.name + " forward", fwd_pd, prim,
        {{DNNL_ARG_SRC, d.act[in]},
         {DNNL_ARG_WEIGHTS, lm.fwd_weights},
         {DNNL_ARG_DST, d.act[out]}});
  }
}

void Planner::backward_conv(size_t i, const Layer& l) {
  const int in = l.inputs[0], out = l.output;
  LayerMemory& lm = d.layers[i];
  ParamMemory& w = param(l.weight);
  const memory::dims strides = {l.stride, l.stride}, pad = {l.padding, l.padding};
  // The images need no gradient: the first conv runs backward-weights only.
  if (in != 0) {
    const memory::dims wd = {l.out_channels, l.in_channels, l.kernel, l.kernel};
    const auto pd = STOKER_DNNL(dnnl::convolution_backward_data::primitive_desc(
        d.engine, lm.conv_algo, d.md[in], memory::desc(wd, d.act_type, tag::any), d.md[out],
        strides, pad, pad, lm.conv_fwd, attr));
    const memory weights =
        pd.weights_desc() == lm.fwd_weights.get_desc()
            ? lm.fwd_weights
            : weights_for(w.value, pd.weights_desc(), l.name + " backward", {&d.backward});
    const memory target = gradient_target(in);
    add(d.backward, l.name + " backward-data", pd, STOKER_DNNL(dnnl::convolution_backward_data(pd)),
        {{DNNL_ARG_DIFF_DST, d.dact[out]},
         {DNNL_ARG_WEIGHTS, weights},
         {DNNL_ARG_DIFF_SRC, target}});
    gradient_written(in, target, l.name);
  }
  // In the layouts backward-weights chose (forward_conv), reordered where they differ.
  memory x = d.act[in], dy = d.dact[out];
  if (lm.conv_bww.src_desc() != x.get_desc()) {
    x = alloc(lm.conv_bww.src_desc());
    add_reorder(d.backward, l.name + " backward-weights input", d.act[in], x);
  }
  if (lm.conv_bww.diff_dst_desc() != dy.get_desc()) {
    dy = alloc(lm.conv_bww.diff_dst_desc());
    add_reorder(d.backward, l.name + " backward-weights gradient", d.dact[out], dy);
  }
  add(d.backward, l.name + " backward-weights", lm.conv_bww,
      STOKER_DNNL(dnnl::convolution_backward_weights(lm.conv_bww)),
      {{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_WEIGHTS, w.grad}});
}

}  // namespace stoker::cpu::planning
