// SPDX-License-Identifier: Apache-2.0
// Planning of dnnl_net.h in two passes. Pass 1 walks the layers forward: each layer's
// forward primitive takes its input in the producer's layout and picks its output layout
// (and, for conv and fc, the weights' layout); this fixes every tensor's layout. Pass 2
// walks them backward: gradients take the layout of the tensor they belong to, so no
// activation is ever reordered inside a step. A tensor read by two layers (a block's input:
// residual branch and shortcut) gets the first gradient written in place and the second one
// added to it.
#include "train/cpu/dnnl_net.h"

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/clock.h"
#include "common/error.h"
#include "train/backend_front.h"
#include "train/cpu/dnnl_check.h"

namespace stoker::cpu {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using tag = memory::format_tag;
using dt = memory::data_type;

const auto kScaleShift = dnnl::normalization_flags::use_scale |  //
                         dnnl::normalization_flags::use_shift;

void* handle(const memory& m) {
  return STOKER_DNNL(m.get_data_handle());
}

struct Planner {
  DnnlNet& d;
  dnnl::primitive_attr attr;  // user scratchpad: one buffer for all, allocated after planning
  int64_t n = 0;

  explicit Planner(DnnlNet& net) : d(net), n(net.config.batch) {
    STOKER_DNNL(attr.set_scratchpad_mode(dnnl::scratchpad_mode::user));
  }

  memory::dims dims(int id) const {
    const ActShape& s = d.shapes[size_t(id)];
    return {n, s.c, s.h, s.w};
  }

  // Zeroed, so that the padding of blocked layouts starts (and, through SGD, stays) zero.
  memory alloc(const memory::desc& md) {
    memory m = STOKER_DNNL(memory(md, d.engine));
    std::memset(handle(m), 0, md.get_size());
    return m;
  }

  template <class Pd>
  void add(std::vector<Step>& program, std::string what, const Pd& pd, dnnl::primitive prim,
           std::unordered_map<int, memory> args) {
    Step s;
    s.what = std::move(what);
    s.impl = STOKER_DNNL(pd.impl_info_str());
    s.prim = std::move(prim);
    s.args = std::move(args);
    s.scratchpad = STOKER_DNNL(pd.scratchpad_desc());
    program.push_back(std::move(s));
  }

  void add_reorder(std::vector<Step>& program, std::string what, const memory& from,
                   const memory& to) {
    const auto pd = STOKER_DNNL(dnnl::reorder::primitive_desc(from, to, attr));
    add(program, std::move(what), pd, STOKER_DNNL(dnnl::reorder(pd)),
        {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
  }

  void add_host(std::vector<Step>& program, std::string what, std::function<void()> f) {
    Step s;
    s.what = std::move(what);
    s.impl = "host";
    s.host = std::move(f);
    program.push_back(std::move(s));
  }

  // dst = src0 + src1 (dst may be src0).
  void add_sum(std::vector<Step>& program, std::string what, const memory& src0, const memory& src1,
               const memory& dst) {
    const auto pd = STOKER_DNNL(dnnl::binary::primitive_desc(
        dnnl::binary::desc(algorithm::binary_add, src0.get_desc(), src1.get_desc(), dst.get_desc()),
        attr, d.engine));
    add(program, std::move(what), pd, STOKER_DNNL(dnnl::binary(pd)),
        {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}});
  }

  ParamMemory& param(int index) { return d.params[size_t(index)]; }

  // The ranks whose batches make one: 1 without a collective.
  int world() const { return d.config.collective != nullptr ? d.config.collective->world() : 1; }

  // Batch norm's flags, the same forward and backward: with the ReLU when it is fused.
  dnnl::normalization_flags bn_flags(int out) const {
    return d.fused_relu[size_t(out)] ? kScaleShift | dnnl::normalization_flags::fuse_norm_relu
                                     : kScaleShift;
  }

  // Global average pooling is one window over the whole input; maxpool pads with -inf,
  // which is oneDNN's "padding is never the maximum".
  struct PoolGeometry {
    algorithm algo;
    memory::dims kernel, strides, pad;
  };
  PoolGeometry pool_geometry(const Layer& l) const {
    if (l.kind == LayerKind::maxpool)
      return {algorithm::pooling_max,
              {l.kernel, l.kernel},
              {l.stride, l.stride},
              {l.padding, l.padding}};
    const ActShape& s = d.shapes[size_t(l.inputs[0])];
    return {algorithm::pooling_avg_exclude_padding, {s.h, s.w}, {1, 1}, {0, 0}};
  }

  // A trainable f32 parameter in the layout `master` (gradient and momentum alike).
  void make_trainable(int index, const memory::desc& master, const memory::desc& plain) {
    ParamMemory& p = param(index);
    p.value = alloc(master);
    // Bound to its place in grad_arena once the backward's order is known (arrange_gradients).
    p.grad = STOKER_DNNL(memory(master, d.engine, DNNL_MEMORY_NONE));
    p.momentum = alloc(master);
    p.plain = plain;
  }
  void make_buffer(int index, const memory::desc& plain) {
    ParamMemory& p = param(index);
    p.value = alloc(plain);
    p.plain = plain;
  }

  void set_output(int id, const memory::desc& md) {
    d.md[size_t(id)] = md;
    d.act[size_t(id)] = alloc(md);
  }

  // The weights a primitive wants as `wanted`: the master itself, or a copy refreshed by a
  // reorder at the start of each step that reads it.
  memory weights_for(const memory& master, const memory::desc& wanted, const std::string& what,
                     std::vector<std::vector<Step>*> programs) {
    if (wanted == master.get_desc()) return master;
    memory copy = alloc(wanted);
    for (auto* program : programs) add_reorder(*program, what + " weights reorder", master, copy);
    ++d.reorders_per_step;
    return copy;
  }

  // fixed:direct: what PyTorch's oneDNN path uses; fixed:winograd (3x3 stride 1 only) and
  // heuristic (oneDNN's choice, which picks Winograd for the large 3x3 convs of ResNet at
  // 224 on AVX-512) trade a few ulps more rounding error for fewer multiplies.
  algorithm preferred_conv_algo(const Layer& l) const {
    const std::string& a = d.config.conv_algorithm;
    if (a == "fixed:winograd")
      return l.kernel == 3 && l.stride == 1 ? algorithm::convolution_winograd
                                            : algorithm::convolution_direct;
    if (a == "heuristic") return algorithm::convolution_auto;
    return algorithm::convolution_direct;
  }

  // ---- pass 1: forward ----

  void forward_conv(size_t i, const Layer& l) {
    STOKER_CHECK_MSG(l.groups == 1 && !l.bias, "{}: grouped or biased conv is not planned", l.name);
    const int in = l.inputs[0], out = l.output;
    const memory::dims w = {l.out_channels, l.in_channels, l.kernel, l.kernel};
    const memory::dims strides = {l.stride, l.stride}, pad = {l.padding, l.padding};
    const memory::desc src = in == 0 ? memory::desc(dims(in), d.act_type, tag::any) : d.md[in];
    // The preferred algorithm where oneDNN has it for this shape, else direct.
    const auto plan = [&](algorithm algo) {
      auto fwd = STOKER_DNNL(dnnl::convolution_forward::primitive_desc(
          dnnl::convolution_forward::desc(
              prop_kind::forward_training, algo, src, memory::desc(w, d.act_type, tag::any),
              memory::desc(dims(out), d.act_type, tag::any), strides, pad, pad),
          attr, d.engine));
      // The master weights take the layout backward-weights writes gradients in (f32).
      const auto backward_weights = [&](const memory::desc& x, const memory::desc& dy) {
        return STOKER_DNNL(dnnl::convolution_backward_weights::primitive_desc(
            dnnl::convolution_backward_weights::desc(algo, x, memory::desc(w, dt::f32, tag::any),
                                                     dy, strides, pad, pad),
            attr, d.engine, fwd));
      };
      auto bww = backward_weights(fwd.src_desc(), fwd.dst_desc());
      // Below AVX-512, oneDNN 2.6 has no JIT backward-weights for the forward's blocked
      // layouts where the input is smaller than the kernel (layer4's 3x3 convs on small
      // images), and its reference kernel takes seconds there: let it pick the layouts
      // (reordered into in backward_conv) when that finds a JIT kernel.
      if (std::string(STOKER_DNNL(bww.impl_info_str())).rfind("ref", 0) == 0) {
        auto own = backward_weights(memory::desc(fwd.src_desc().dims(), d.act_type, tag::any),
                                    memory::desc(fwd.dst_desc().dims(), d.act_type, tag::any));
        if (std::string(STOKER_DNNL(own.impl_info_str())).rfind("ref", 0) != 0) bww = own;
      }
      return std::pair(fwd, bww);
    };
    LayerMemory& lm = d.layers[i];
    lm.conv_algo = preferred_conv_algo(l);
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

  void forward_batchnorm(size_t i, const Layer& l) {
    const int in = l.inputs[0], out = l.output;
    const ActShape& s = d.shapes[size_t(in)];
    const int64_t per_channel = n * s.h * s.w;  // more than one (check_plan)
    const memory::desc c_md({s.c}, dt::f32, tag::x);
    make_trainable(l.weight, c_md, c_md);
    make_trainable(l.bias_param, c_md, c_md);
    make_buffer(l.running_mean, c_md);
    make_buffer(l.running_var, c_md);

    const bool fuse = d.fused_relu[size_t(out)];
    const bool sync = d.config.sync_bn;
    const auto flags = bn_flags(out);
    const auto forward_pd = [&](dnnl::normalization_flags f) {
      return STOKER_DNNL(dnnl::batch_normalization_forward::primitive_desc(
          dnnl::batch_normalization_forward::desc(prop_kind::forward_training, d.md[in],
                                                  float(l.eps), f),
          attr, d.engine));
    };
    // Sync BN: this rank's statistics first (no ReLU: the output is rewritten below), then
    // the global ones, then the normalisation with them as given statistics.
    const auto train_pd =
        sync ? forward_pd(flags | dnnl::normalization_flags::use_global_stats) : forward_pd(flags);
    set_output(out, train_pd.dst_desc());
    LayerMemory& lm = d.layers[i];
    lm.bn_fwd = train_pd;
    lm.mean = alloc(train_pd.mean_desc());
    lm.variance = alloc(train_pd.variance_desc());
    const ParamMemory &w = param(l.weight), &b = param(l.bias_param);
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, d.act[in]}, {DNNL_ARG_DST, d.act[out]}, {DNNL_ARG_SCALE, w.value},
        {DNNL_ARG_SHIFT, b.value}, {DNNL_ARG_MEAN, lm.mean},   {DNNL_ARG_VARIANCE, lm.variance}};
    if (sync) {
      const auto local_pd = forward_pd(kScaleShift);
      add(d.forward_train, l.name + " local statistics", local_pd,
          STOKER_DNNL(dnnl::batch_normalization_forward(local_pd)), args);
      add_host(d.forward_train, l.name + " sync statistics",
               sync_statistics(lm.mean, lm.variance, s.c, per_channel));
    }
    if (fuse) {  // the ReLU's mask, for the fused backward
      lm.workspace = alloc(train_pd.workspace_desc());
      args[DNNL_ARG_WORKSPACE] = lm.workspace;
    }
    add(d.forward_train,
        l.name + (fuse ? " forward (+relu)" : " forward") + (sync ? " global statistics" : ""),
        train_pd, STOKER_DNNL(dnnl::batch_normalization_forward(train_pd)), args);
    // torch's running statistics: the unbiased batch variance, momentum as the new weight.
    float* running_mean = static_cast<float*>(handle(param(l.running_mean).value));
    float* running_var = static_cast<float*>(handle(param(l.running_var).value));
    const float* mean = static_cast<const float*>(handle(lm.mean));
    const float* var = static_cast<const float*>(handle(lm.variance));
    int64_t* count = l.num_batches_tracked >= 0 ? &param(l.num_batches_tracked).count : nullptr;
    const float m = float(l.momentum);
    // Sync BN: over the global batch, as torch's SyncBatchNorm.
    const int64_t global = per_channel * (sync ? world() : 1);
    const float unbias = float(global) / float(global - 1);
    const int64_t channels = s.c;
    bool* nonfinite = &d.nonfinite_statistics;
    add_host(d.forward_train, l.name + " running statistics", [=] {
      bool finite = true;
      for (int64_t c = 0; c < channels; ++c) {
        running_mean[c] = m * mean[c] + (1 - m) * running_mean[c];
        running_var[c] = m * (var[c] * unbias) + (1 - m) * running_var[c];
        finite = finite && std::isfinite(mean[c]) && std::isfinite(var[c]);
      }
      // A NaN or inf in the batch (a NaN input, a diverged step) makes torch's batch norm put
      // NaN in every value of that channel, and its ReLU keeps NaN; oneDNN's ReLU, max(x, 0),
      // turns NaN into 0 and the step would go on with a finite loss. Non-finite statistics
      // therefore make the loss and its gradient NaN, as torch's are (forward_loss).
      if (!finite) *nonfinite = true;
      if (count != nullptr) *count += 1;
    });

    const auto eval_pd = STOKER_DNNL(dnnl::batch_normalization_forward::primitive_desc(
        dnnl::batch_normalization_forward::desc(
            prop_kind::forward_inference, d.md[in], float(l.eps),
            flags | dnnl::normalization_flags::use_global_stats),
        attr, d.engine));
    add(d.forward_eval, l.name + " forward (eval)", eval_pd,
        STOKER_DNNL(dnnl::batch_normalization_forward(eval_pd)),
        {{DNNL_ARG_SRC, d.act[in]},
         {DNNL_ARG_DST, d.act[out]},
         {DNNL_ARG_SCALE, w.value},
         {DNNL_ARG_SHIFT, b.value},
         {DNNL_ARG_MEAN, param(l.running_mean).value},
         {DNNL_ARG_VARIANCE, param(l.running_var).value}});
  }

  // Sync BN's forward host step: every rank's per-channel mean and (biased) variance into the
  // global ones, in place. Two all-reduces (the means, then each rank's spread around the
  // global mean) keep the two-pass accuracy that E[x^2] - E[x]^2 would lose. Every rank has
  // `per_channel` values per channel (one batch size for all).
  std::function<void()> sync_statistics(memory mean_m, memory var_m, int64_t channels,
                                        int64_t per_channel) {
    Collective* coll = world() > 1 ? d.config.collective : nullptr;
    if (coll == nullptr) return [] {};  // one rank: its statistics are the global ones
    const double global = double(per_channel) * coll->world();
    auto buffer = std::make_shared<std::vector<float>>(size_t(channels));
    auto gmean = std::make_shared<std::vector<double>>(size_t(channels));
    return [=] {
      float* mean = static_cast<float*>(handle(mean_m));
      float* var = static_cast<float*>(handle(var_m));
      float* b = buffer->data();
      for (int64_t c = 0; c < channels; ++c) b[c] = float(double(mean[c]) * double(per_channel));
      coll->allreduce_sum(b, size_t(channels));
      for (int64_t c = 0; c < channels; ++c) {
        (*gmean)[size_t(c)] = double(b[c]) / global;
        const double dm = double(mean[c]) - (*gmean)[size_t(c)];
        b[c] = float(double(per_channel) * (double(var[c]) + dm * dm));
      }
      coll->allreduce_sum(b, size_t(channels));
      for (int64_t c = 0; c < channels; ++c) {
        mean[c] = float((*gmean)[size_t(c)]);
        var[c] = float(double(b[c]) / global);
      }
    };
  }

  void forward_relu(size_t i, const Layer& l) {
    const int in = l.inputs[0], out = l.output;
    if (d.fused_relu[size_t(in)]) {  // done by the batch norm that wrote `in`: same memory
      d.md[size_t(out)] = d.md[size_t(in)];
      d.act[size_t(out)] = d.act[size_t(in)];
      return;
    }
    const auto pd = STOKER_DNNL(dnnl::eltwise_forward::primitive_desc(
        dnnl::eltwise_forward::desc(prop_kind::forward_training, algorithm::eltwise_relu, d.md[in],
                                    0.f, 0.f),
        attr, d.engine));
    set_output(out, pd.dst_desc());
    d.layers[i].relu_fwd = pd;
    const auto prim = STOKER_DNNL(dnnl::eltwise_forward(pd));
    for (auto* program : {&d.forward_train, &d.forward_eval})
      add(*program, l.name + " forward", pd, prim,
          {{DNNL_ARG_SRC, d.act[in]}, {DNNL_ARG_DST, d.act[out]}});
  }

  void forward_pool(size_t i, const Layer& l) {
    const int in = l.inputs[0], out = l.output;
    const PoolGeometry g = pool_geometry(l);
    const bool max = g.algo == algorithm::pooling_max;
    const auto pd = STOKER_DNNL(dnnl::pooling_forward::primitive_desc(
        dnnl::pooling_forward::desc(prop_kind::forward_training, g.algo, d.md[in],
                                    memory::desc(dims(out), d.act_type, tag::any), g.strides,
                                    g.kernel, g.pad, g.pad),
        attr, d.engine));
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

  void forward_fc(size_t i, const Layer& l) {
    const int in = l.inputs[0], out = l.output;
    const ActShape& s = d.shapes[size_t(in)];
    STOKER_CHECK_MSG(s.c == l.in_channels && l.bias_param >= 0, "{}: unexpected fc input", l.name);
    // Weights as oneDNN sees them: K x C x H x W over the (1 x 1) pooled input; torch's K x C
    // has the same bytes in plain layout.
    const memory::dims w = {l.out_channels, s.c, s.h, s.w};
    const memory::dims b = {l.out_channels};
    const memory::dims dst = {n, l.out_channels};
    const auto fwd_pd = STOKER_DNNL(dnnl::inner_product_forward::primitive_desc(
        dnnl::inner_product_forward::desc(
            prop_kind::forward_training, d.md[in], memory::desc(w, d.act_type, tag::any),
            memory::desc(b, dt::f32, tag::any), memory::desc(dst, d.act_type, tag::any)),
        attr, d.engine));
    set_output(out, fwd_pd.dst_desc());
    const auto bww_pd = STOKER_DNNL(dnnl::inner_product_backward_weights::primitive_desc(
        dnnl::inner_product_backward_weights::desc(d.md[in], memory::desc(w, dt::f32, tag::any),
                                                   memory::desc(b, dt::f32, tag::any), d.md[out]),
        attr, d.engine, fwd_pd));
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

  void forward_add(const Layer& l) {
    const int a = l.inputs[0], b = l.inputs[1], out = l.output;
    set_output(out, d.md[a]);
    for (auto* program : {&d.forward_train, &d.forward_eval})
      add_sum(*program, l.name + " forward", d.act[a], d.act[b], d.act[out]);
  }

  // The logits leave in plain f32; the loss is log-softmax (oneDNN) and a sum over the batch.
  void forward_loss() {
    const int last = int(d.act.size()) - 1;
    const int64_t classes = d.net.num_classes;
    const memory::desc plain({n, classes}, dt::f32, tag::nc);
    d.logits_plain = alloc(plain);
    d.logp = alloc(plain);
    d.dlogits_plain = alloc(plain);
    for (auto* program : {&d.forward_train, &d.forward_eval})
      add_reorder(*program, "logits to plain", d.act[last], d.logits_plain);
    const auto pd = STOKER_DNNL(dnnl::logsoftmax_forward::primitive_desc(
        dnnl::logsoftmax_forward::desc(prop_kind::forward_training, plain, 1), attr, d.engine));
    add(d.forward_train, "log-softmax", pd, STOKER_DNNL(dnnl::logsoftmax_forward(pd)),
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

  // ---- pass 2: backward ----

  std::vector<bool> written;  // per tensor: whether its gradient holds a first contribution

  // Where a layer writes the gradient of tensor `id`, and what to run after it.
  memory gradient_target(int id) {
    if (!written[size_t(id)]) return d.dact[size_t(id)];
    return STOKER_DNNL(memory(d.md[size_t(id)], d.engine, handle(d.accumulate_storage)));
  }
  void gradient_written(int id, const memory& target, const std::string& what) {
    if (target.get_data_handle() != d.dact[size_t(id)].get_data_handle())
      add_sum(d.backward, what + " gradient sum", d.dact[size_t(id)], target, d.dact[size_t(id)]);
    written[size_t(id)] = true;
  }

  void backward_conv(size_t i, const Layer& l) {
    const int in = l.inputs[0], out = l.output;
    LayerMemory& lm = d.layers[i];
    ParamMemory& w = param(l.weight);
    const memory::dims strides = {l.stride, l.stride}, pad = {l.padding, l.padding};
    // The images need no gradient: the first conv runs backward-weights only.
    if (in != 0) {
      const memory::dims wd = {l.out_channels, l.in_channels, l.kernel, l.kernel};
      const auto pd = STOKER_DNNL(dnnl::convolution_backward_data::primitive_desc(
          dnnl::convolution_backward_data::desc(lm.conv_algo, d.md[in],
                                                memory::desc(wd, d.act_type, tag::any), d.md[out],
                                                strides, pad, pad),
          attr, d.engine, lm.conv_fwd));
      const memory weights =
          pd.weights_desc() == lm.fwd_weights.get_desc()
              ? lm.fwd_weights
              : weights_for(w.value, pd.weights_desc(), l.name + " backward", {&d.backward});
      const memory target = gradient_target(in);
      add(d.backward, l.name + " backward-data", pd,
          STOKER_DNNL(dnnl::convolution_backward_data(pd)),
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

  void backward_batchnorm(size_t i, const Layer& l) {
    const int in = l.inputs[0], out = l.output;
    const LayerMemory& lm = d.layers[i];
    const bool fuse = d.fused_relu[size_t(out)];
    const bool sync = d.config.sync_bn;
    // Sync BN: dx with the global statistics as constants, then the correction below.
    const auto flags =
        sync ? bn_flags(out) | dnnl::normalization_flags::use_global_stats : bn_flags(out);
    const auto pd = STOKER_DNNL(dnnl::batch_normalization_backward::primitive_desc(
        dnnl::batch_normalization_backward::desc(prop_kind::backward, d.md[out], d.md[in],
                                                 float(l.eps), flags),
        attr, d.engine, lm.bn_fwd));
    const memory target = gradient_target(in);
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, d.act[in]},
                                            {DNNL_ARG_MEAN, lm.mean},
                                            {DNNL_ARG_VARIANCE, lm.variance},
                                            {DNNL_ARG_DIFF_DST, d.dact[out]},
                                            {DNNL_ARG_SCALE, param(l.weight).value},
                                            {DNNL_ARG_SHIFT, param(l.bias_param).value},
                                            {DNNL_ARG_DIFF_SRC, target},
                                            {DNNL_ARG_DIFF_SCALE, param(l.weight).grad},
                                            {DNNL_ARG_DIFF_SHIFT, param(l.bias_param).grad}};
    if (fuse) args[DNNL_ARG_WORKSPACE] = lm.workspace;  // the ReLU's mask
    add(d.backward, l.name + (fuse ? " backward (+relu)" : " backward"), pd,
        STOKER_DNNL(dnnl::batch_normalization_backward(pd)), args);
    if (sync) sync_backward(i, l, target);
    gradient_written(in, target, l.name);
  }

  // Sync BN's backward. With k = gamma / sigma, xhat = (x - mean) / sigma, and the sums over
  // the global batch of M values per channel, S1 = sum dy and S2 = sum dy * xhat (dy masked
  // by the fused ReLU), the true gradient is
  //   dx = k (dy - S1 / M - xhat S2 / M) = [k dy] + a x + b,
  //   a = -k S2 / (M sigma),  b = -k S1 / M - a mean,
  // where [k dy] is what the backward wrote with the statistics as constants. This rank's S1
  // and S2 are the parameter gradients it just wrote (kept local: the buckets average them
  // over the ranks, as torch's DDP does); a host step all-reduces copies of them and makes
  // a and b, and one binary primitive adds a x + b onto dx.
  void sync_backward(size_t i, const Layer& l, const memory& target) {
    const int in = l.inputs[0];
    LayerMemory& lm = d.layers[i];
    const ActShape& s = d.shapes[size_t(in)];
    const int64_t channels = s.c;
    const memory::desc per_channel({1, channels, 1, 1}, dt::f32, tag::abcd);
    lm.sync_a = alloc(per_channel);
    lm.sync_b = alloc(per_channel);
    Collective* coll = world() > 1 ? d.config.collective : nullptr;
    const double count = double(n * s.h * s.w) * world();
    const float eps = float(l.eps);
    const memory dgamma = param(l.weight).grad, dbeta = param(l.bias_param).grad;
    const memory gamma = param(l.weight).value, mean = lm.mean, var = lm.variance;
    const memory a_m = lm.sync_a, b_m = lm.sync_b;
    auto sums = std::make_shared<std::vector<float>>(size_t(2 * channels));
    // The gradients are declared as arguments: this step is their last reader, so their
    // bucket starts after it (arrange_gradients).
    add_host(d.backward, l.name + " sync gradient sums", [=] {
      float* sum = sums->data();
      std::memcpy(sum, handle(dgamma), size_t(channels) * sizeof(float));
      std::memcpy(sum + channels, handle(dbeta), size_t(channels) * sizeof(float));
      if (coll != nullptr) coll->allreduce_sum(sum, size_t(2 * channels));
      const float* g = static_cast<const float*>(handle(gamma));
      const float* mu = static_cast<const float*>(handle(mean));
      const float* v = static_cast<const float*>(handle(var));
      float* a = static_cast<float*>(handle(a_m));
      float* b = static_cast<float*>(handle(b_m));
      for (int64_t c = 0; c < channels; ++c) {
        const double sigma = std::sqrt(double(v[c]) + double(eps));
        const double k = double(g[c]) / sigma;
        const double ac = -k * double(sum[c]) / (count * sigma);
        a[c] = float(ac);
        b[c] = float(-k * double(sum[channels + c]) / count - ac * double(mu[c]));
      }
    });
    d.backward.back().args = {{DNNL_ARG_DIFF_SCALE, dgamma}, {DNNL_ARG_DIFF_SHIFT, dbeta}};
    dnnl::post_ops ops;
    STOKER_DNNL(ops.append_binary(algorithm::binary_add, per_channel));
    STOKER_DNNL(ops.append_sum(1.0f));
    dnnl::primitive_attr with_ops;  // not `attr`: a copy would share (and change) it
    STOKER_DNNL(with_ops.set_scratchpad_mode(dnnl::scratchpad_mode::user));
    STOKER_DNNL(with_ops.set_post_ops(ops));
    const auto pd = STOKER_DNNL(dnnl::binary::primitive_desc(
        dnnl::binary::desc(algorithm::binary_mul, d.md[size_t(in)], per_channel, target.get_desc()),
        with_ops, d.engine));
    add(d.backward, l.name + " sync correction", pd, STOKER_DNNL(dnnl::binary(pd)),
        {{DNNL_ARG_SRC_0, d.act[size_t(in)]},
         {DNNL_ARG_SRC_1, a_m},
         {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, b_m},
         {DNNL_ARG_DST, target}});
  }

  void backward_relu(size_t i, const Layer& l) {
    const int in = l.inputs[0], out = l.output;
    if (d.fused_relu[size_t(in)]) {  // the batch norm's backward applies the mask
      written[size_t(in)] = true;
      return;
    }
    const auto pd = STOKER_DNNL(dnnl::eltwise_backward::primitive_desc(
        dnnl::eltwise_backward::desc(algorithm::eltwise_relu, d.md[out], d.md[in], 0.f, 0.f), attr,
        d.engine, d.layers[i].relu_fwd));
    const memory target = gradient_target(in);
    add(d.backward, l.name + " backward", pd, STOKER_DNNL(dnnl::eltwise_backward(pd)),
        {{DNNL_ARG_SRC, d.act[in]}, {DNNL_ARG_DIFF_DST, d.dact[out]}, {DNNL_ARG_DIFF_SRC, target}});
    gradient_written(in, target, l.name);
  }

  void backward_pool(size_t i, const Layer& l) {
    const int in = l.inputs[0], out = l.output;
    const LayerMemory& lm = d.layers[i];
    const PoolGeometry g = pool_geometry(l);
    const bool max = g.algo == algorithm::pooling_max;
    const auto pd = STOKER_DNNL(dnnl::pooling_backward::primitive_desc(
        dnnl::pooling_backward::desc(g.algo, d.md[in], d.md[out], g.strides, g.kernel, g.pad,
                                     g.pad),
        attr, d.engine, lm.pool_fwd));
    const memory target = gradient_target(in);
    std::unordered_map<int, memory> args = {{DNNL_ARG_DIFF_DST, d.dact[out]},
                                            {DNNL_ARG_DIFF_SRC, target}};
    if (max) args[DNNL_ARG_WORKSPACE] = lm.workspace;
    add(d.backward, l.name + " backward", pd, STOKER_DNNL(dnnl::pooling_backward(pd)), args);
    gradient_written(in, target, l.name);
  }

  void backward_fc(size_t i, const Layer& l) {
    const int in = l.inputs[0], out = l.output;
    const LayerMemory& lm = d.layers[i];
    const ActShape& s = d.shapes[size_t(in)];
    const memory::dims w = {l.out_channels, s.c, s.h, s.w};
    const auto pd = STOKER_DNNL(dnnl::inner_product_backward_data::primitive_desc(
        dnnl::inner_product_backward_data::desc(d.md[in], memory::desc(w, d.act_type, tag::any),
                                                d.md[out]),
        attr, d.engine, lm.fc_fwd));
    const memory weights = pd.weights_desc() == lm.fwd_weights.get_desc()
                               ? lm.fwd_weights
                               : weights_for(param(l.weight).value, pd.weights_desc(),
                                             l.name + " backward", {&d.backward});
    const memory target = gradient_target(in);
    add(d.backward, l.name + " backward-data", pd,
        STOKER_DNNL(dnnl::inner_product_backward_data(pd)),
        {{DNNL_ARG_DIFF_DST, d.dact[out]},
         {DNNL_ARG_WEIGHTS, weights},
         {DNNL_ARG_DIFF_SRC, target}});
    gradient_written(in, target, l.name);
    add(d.backward, l.name + " backward-weights", lm.fc_bww,
        STOKER_DNNL(dnnl::inner_product_backward_weights(lm.fc_bww)),
        {{DNNL_ARG_SRC, d.act[in]},
         {DNNL_ARG_DIFF_DST, d.dact[out]},
         {DNNL_ARG_DIFF_WEIGHTS, param(l.weight).grad},
         {DNNL_ARG_DIFF_BIAS, param(l.bias_param).grad}});
  }

  // Both inputs receive the output's gradient unchanged: a copy for the first contribution,
  // an in-place sum for the second.
  void backward_add(const Layer& l) {
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

  // Gradients that can live in one memory. A fused ReLU's input and output (oneDNN applies
  // the mask). An add passes its output's gradient unchanged to both inputs: an input whose
  // last reader is the add takes the add output's gradient memory, so the backward moves
  // nothing; any earlier reader (a block's conv1 reading its input) adds its contribution
  // there later, when the add's output gradient is no longer needed.
  std::vector<int> parent;
  int find(int t) {
    while (parent[size_t(t)] != t) t = parent[size_t(t)] = parent[size_t(parent[size_t(t)])];
    return t;
  }
  void share_gradients() {
    const size_t tensors = d.shapes.size();
    parent.resize(tensors);
    for (size_t t = 0; t < tensors; ++t) parent[t] = int(t);
    std::vector<size_t> last_reader(tensors, 0);
    for (size_t i = 0; i < d.net.layers.size(); ++i)
      for (int t : d.net.layers[i].inputs) last_reader[size_t(t)] = i;
    d.grad_final.assign(tensors, true);
    d.grad_final[0] = false;
    for (size_t i = 0; i < d.net.layers.size(); ++i) {
      const Layer& l = d.net.layers[i];
      if (l.kind != LayerKind::add) continue;
      for (int t : l.inputs)
        if (t > 0 && last_reader[size_t(t)] == i && d.md[size_t(t)] == d.md[size_t(l.output)])
          parent[size_t(find(t))] = find(l.output);
    }
    // After the backward a shared memory holds the gradient of its earliest tensor (the one
    // written last); the others' are gone (tests compare only the survivors).
    std::vector<int> earliest(tensors, -1);
    for (size_t t = 1; t < tensors; ++t)
      if (earliest[size_t(find(int(t)))] < 0) earliest[size_t(find(int(t)))] = int(t);
    for (size_t t = 1; t < tensors; ++t) d.grad_final[t] = earliest[size_t(find(int(t)))] == int(t);
    for (size_t t = 1; t + 1 < tensors; ++t) {
      if (!d.fused_relu[t]) continue;
      STOKER_CHECK(find(int(t)) == int(t) && find(int(t + 1)) == int(t + 1));
      parent[t + 1] = int(t);
      d.grad_final[t] = false;  // holds the ReLU output's gradient, before the mask
      d.grad_final[t + 1] = true;
    }
  }

  // Every trainable gradient into grad_arena, in the order the backward finishes them; with a
  // collective of world > 1, buckets of about config.bucket_bytes over that order, each with
  // a host step right after the last step that writes or reads one of its gradients.
  void arrange_gradients() {
    std::unordered_map<dnnl_memory_t, int> owner;
    for (size_t p = 0; p < d.params.size(); ++p)
      if (d.net.params[p].trainable) owner[d.params[p].grad.get()] = int(p);
    std::vector<int> order;
    std::vector<size_t> last_step(d.params.size(), 0);
    std::vector<bool> seen(d.params.size(), false);
    for (size_t i = 0; i < d.backward.size(); ++i) {
      std::vector<int> here;  // sorted: the args map has no order of its own
      for (const auto& [arg, m] : d.backward[i].args) {
        const auto it = owner.find(m.get());
        if (it != owner.end()) here.push_back(it->second);
      }
      std::sort(here.begin(), here.end());
      for (const int p : here) {
        if (!seen[size_t(p)]) order.push_back(p);
        seen[size_t(p)] = true;
        last_step[size_t(p)] = i;
      }
    }
    STOKER_CHECK_MSG(order.size() == owner.size(), "{}: {} of {} gradients written by the backward",
                     d.net.name, order.size(), owner.size());
    const auto align = [](size_t x) { return (x + 63) / 64 * 64; };
    std::vector<size_t> offset(d.params.size(), 0);
    size_t end = 0;
    for (const int p : order) {
      offset[size_t(p)] = end;
      end = align(end + d.params[size_t(p)].grad.get_desc().get_size());
    }
    d.grad_arena_bytes = std::max<size_t>(end, 64);
    d.grad_arena = alloc(memory::desc({memory::dim(d.grad_arena_bytes)}, dt::u8, tag::x));
    auto* base = static_cast<uint8_t*>(handle(d.grad_arena));
    for (const int p : order)
      STOKER_DNNL(d.params[size_t(p)].grad.set_data_handle(base + offset[size_t(p)]));
    if (world() <= 1) return;

    std::vector<size_t> ready;  // per bucket: the backward step after which it may go
    for (size_t k = 0; k < order.size(); ++k) {
      const int p = order[k];
      if (d.buckets.empty() || d.buckets.back().floats > 0) {
        d.buckets.push_back({offset[size_t(p)], 0, {}});
        ready.push_back(0);
      }
      GradBucket& b = d.buckets.back();
      b.params.push_back(p);
      ready.back() = std::max(ready.back(), last_step[size_t(p)]);
      const size_t b_end = k + 1 < order.size() ? offset[size_t(order[k + 1])] : end;
      if (b_end - b.offset >= d.config.bucket_bytes || k + 1 == order.size())
        b.floats = (b_end - b.offset) / sizeof(float);
    }
    // Started in bucket order on every rank (collectives match by order).
    for (size_t k = 1; k < ready.size(); ++k) ready[k] = std::max(ready[k], ready[k - 1]);
    DnnlNet* net = &d;
    for (size_t k = d.buckets.size(); k-- > 0;) {
      std::vector<Step> one;
      add_host(one, fmt::format("gradient bucket {} all-reduce", k), [net, k] {
        if (net->bucket_ready) net->bucket_ready(k);
      });
      d.backward.insert(d.backward.begin() + std::ptrdiff_t(ready[k] + 1), std::move(one.front()));
    }
  }

  void plan() {
    const size_t tensors = d.shapes.size();
    d.md.resize(tensors);
    d.act.resize(tensors);
    d.dact.resize(tensors);
    d.layers.resize(d.net.layers.size());
    d.params.resize(d.net.params.size());
    // A batch norm whose only reader is a ReLU runs as one oneDNN primitive (fuse_norm_relu):
    // one pass over the tensor instead of two, forward and backward; the ReLU's output is
    // the batch norm's output memory.
    std::vector<int> readers(tensors, 0);
    for (const Layer& l : d.net.layers)
      for (int t : l.inputs) ++readers[size_t(t)];
    d.fused_relu.assign(tensors, false);
    for (size_t i = 1; i < d.net.layers.size(); ++i) {
      const Layer& l = d.net.layers[i];
      const int t = l.inputs[0];  // written by layer t - 1: the one just before
      if (l.kind == LayerKind::relu && t == int(i) && readers[size_t(t)] == 1 &&
          d.net.layers[size_t(t - 1)].kind == LayerKind::batchnorm)
        d.fused_relu[size_t(t)] = true;
    }

    // The images arrive plain (NCHW or NHWC f32) and are reordered into the first conv's
    // layout; the conv that reads tensor 0 plans it, so its step goes first.
    const memory::desc user(dims(0), dt::f32, d.config.input.nhwc ? tag::nhwc : tag::nchw);
    d.images_user = STOKER_DNNL(memory(user, d.engine, DNNL_MEMORY_NONE));
    for (size_t i = 0; i < d.net.layers.size(); ++i) {
      const Layer& l = d.net.layers[i];
      try {
        switch (l.kind) {
          case LayerKind::conv:
            forward_conv(i, l);
            break;
          case LayerKind::batchnorm:
            forward_batchnorm(i, l);
            break;
          case LayerKind::relu:
            forward_relu(i, l);
            break;
          case LayerKind::maxpool:
          case LayerKind::global_avgpool:
            forward_pool(i, l);
            break;
          case LayerKind::fc:
            forward_fc(i, l);
            break;
          case LayerKind::add:
            forward_add(l);
            break;
        }
      } catch (const Error& e) {
        fail("{} (oneDNN plan): layer {} ({}): {}", d.net.name, l.name, kind_name(l.kind),
             e.what());
      }
      if (i == 0) {
        STOKER_CHECK_MSG(l.inputs[0] == 0, "the first layer must read the images");
        for (auto* program : {&d.forward_train, &d.forward_eval}) {
          std::vector<Step> edge;
          add_reorder(edge, "images to the first layer's layout", d.images_user, d.act[0]);
          program->insert(program->begin(), std::move(edge.front()));
        }
      }
    }
    forward_loss();

    // Pass 2, with every layout known.
    share_gradients();
    size_t largest = 0;
    for (size_t t = 1; t < tensors; ++t) {
      const size_t r = size_t(find(int(t)));
      if (!d.dact[r]) d.dact[r] = alloc(d.md[r]);
      d.dact[t] = d.dact[r];
      largest = std::max(largest, d.md[t].get_size());
    }
    d.accumulate_storage = alloc(memory::desc({memory::dim(largest)}, dt::u8, tag::x));
    written.assign(tensors, false);
    add_reorder(d.backward, "logits gradient from plain", d.dlogits_plain, d.dact.back());
    written[tensors - 1] = true;
    for (size_t i = d.net.layers.size(); i-- > 0;) {
      const Layer& l = d.net.layers[i];
      try {
        switch (l.kind) {
          case LayerKind::conv:
            backward_conv(i, l);
            break;
          case LayerKind::batchnorm:
            backward_batchnorm(i, l);
            break;
          case LayerKind::relu:
            backward_relu(i, l);
            break;
          case LayerKind::maxpool:
          case LayerKind::global_avgpool:
            backward_pool(i, l);
            break;
          case LayerKind::fc:
            backward_fc(i, l);
            break;
          case LayerKind::add:
            backward_add(l);
            break;
        }
      } catch (const Error& e) {
        fail("{} (oneDNN plan): layer {} ({}) backward: {}", d.net.name, l.name, kind_name(l.kind),
             e.what());
      }
    }

    arrange_gradients();

    // One scratchpad for every primitive: they run one at a time.
    for (auto* program : {&d.forward_train, &d.forward_eval, &d.backward})
      for (const Step& s : *program)
        if (!s.host) d.scratchpad_bytes = std::max(d.scratchpad_bytes, s.scratchpad.get_size());
    d.scratch_storage =
        alloc(memory::desc({memory::dim(std::max<size_t>(d.scratchpad_bytes, 1))}, dt::u8, tag::x));
    for (auto* program : {&d.forward_train, &d.forward_eval, &d.backward})
      for (Step& s : *program)
        if (!s.host && s.scratchpad.get_size() > 0)
          s.args[DNNL_ARG_SCRATCHPAD] =
              STOKER_DNNL(memory(s.scratchpad, d.engine, handle(d.scratch_storage)));
    // The C argument arrays, built once: the C++ execute() would build them from the map on
    // every call, an allocation per primitive per step.
    for (auto* program : {&d.forward_train, &d.forward_eval, &d.backward})
      for (Step& s : *program)
        for (const auto& [arg, m] : s.args) s.exec_args.push_back({arg, m.get()});
  }
};

}  // namespace

std::unique_ptr<DnnlNet> plan_dnnl_net(const Network& net, const BackendConfig& config) {
  if (config.conv_algorithm != "heuristic" && config.conv_algorithm != "fixed:direct" &&
      config.conv_algorithm != "fixed:winograd") {
    fail(
        "{} (oneDNN): convolution algorithm '{}' is not offered on the CPU: expected heuristic, "
        "fixed:direct or fixed:winograd{}",
        net.name, config.conv_algorithm,
        config.conv_algorithm == "exhaustive" ? " (exhaustive search is cuda only)" : "");
  }
  check_plan(net, config, "oneDNN");
  if (config.sync_bn && config.precision != Precision::f32)
    fail("{} (oneDNN): synchronised batch norm (--sync-bn) is planned for f32 only, not {}",
         net.name, precision_name(config.precision));
  auto owned = std::make_unique<DnnlNet>();
  DnnlNet& d = *owned;
  d.net = net;
  d.config = config;
  d.shapes = infer_shapes(net, config.height, config.width);
  STOKER_CHECK(!net.layers.empty() && net.layers.back().kind == LayerKind::fc);
  STOKER_CHECK(net.layers.back().output == int(d.shapes.size()) - 1);
  d.act_type = config.precision == Precision::bf16 ? dt::bf16 : dt::f32;
  d.engine = STOKER_DNNL(dnnl::engine(dnnl::engine::kind::cpu, 0));
  d.stream = STOKER_DNNL(dnnl::stream(d.engine));
  d.labels.assign(size_t(config.batch), 0);
  if (config.input.type == InputType::u8)
    d.images_f32.assign(size_t(config.batch * 3 * config.height * config.width), 0.f);
  Planner(d).plan();
  return owned;
}

void run(DnnlNet& d, std::vector<Step>& program, std::vector<ActivityRecord>* activity,
         int64_t step) {
  for (Step& s : program) {
    // One branch per step when not recording: the clock is read only when asked.
    const int64_t begin = activity != nullptr ? now_ns() : 0;
    if (s.host) {
      STOKER_DNNL(d.stream.wait());
      s.host();
    } else {
      const dnnl_status_t status = dnnl_primitive_execute(
          s.prim.get(), d.stream.get(), int(s.exec_args.size()), s.exec_args.data());
      if (status != dnnl_success)
        fail("{} (oneDNN): {} failed with status {}", d.net.name, s.what, dnnl_status2str(status));
    }
    if (activity != nullptr) {
      ActivityRecord r;
      r.kind = ActivityRecord::Kind::primitive;
      r.begin_ns = begin;
      r.end_ns = now_ns();
      r.name = s.what;
      r.step = step;
      activity->push_back(std::move(r));
    }
  }
  STOKER_DNNL(d.stream.wait());
}

std::vector<float> debug_tensor(DnnlNet& d, int id, bool gradient) {
  STOKER_CHECK(id >= 0 && size_t(id) < d.md.size());
  if (gradient ? id == 0 || !d.grad_final[size_t(id)] : bool(d.fused_relu[size_t(id)])) return {};
  const memory& m = gradient ? d.dact[size_t(id)] : d.act[size_t(id)];
  const memory::dims dims = m.get_desc().dims();
  const memory::desc plain(dims, dt::f32, dims.size() == 2 ? tag::nc : tag::nchw);
  std::vector<float> out(plain.get_size() / sizeof(float));
  memory user = STOKER_DNNL(memory(plain, d.engine, out.data()));
  memory src = m;
  STOKER_DNNL(dnnl::reorder(src, user).execute(d.stream, src, user));
  STOKER_DNNL(d.stream.wait());
  return out;
}

}  // namespace stoker::cpu
