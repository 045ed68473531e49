// SPDX-License-Identifier: Apache-2.0
// Batch normalisation in training (fused with its ReLU where that is its only reader),
// torch's running statistics, inference, and synchronised batch norm across ranks.
// Part of the planner (dnnl_plan.h).
#include <cmath>
#include <cstring>
#include <memory>

#include "common/error.h"
#include "train/cpu/dnnl_plan.h"

namespace stoker::cpu::planning {

// Whether the batch norm writing tensor `out` (layer out - 1, models/network.h) computes its
// ReLU too: its op is a bn_relu.
bool Planner::relu_fused(int out) const {
  return op_of(d.lowering, out - 1).kind == OpKind::bn_relu;
}

// Batch norm's flags, the same forward and backward: with the ReLU when it is fused.
dnnl::normalization_flags Planner::bn_flags(int out) const {
  return relu_fused(out) ? kScaleShift | dnnl::normalization_flags::fuse_norm_relu : kScaleShift;
}

void Planner::forward_batchnorm(size_t i, const Layer& l) {
  const int in = l.inputs[0], out = l.output;
  const ActShape& s = d.shapes[size_t(in)];
  const int64_t per_channel = n * s.h * s.w;  // more than one (check_plan)
  const memory::desc c_md({s.c}, dt::f32, tag::x);
  make_trainable(l.weight, c_md, c_md);
  make_trainable(l.bias_param, c_md, c_md);
  make_buffer(l.running_mean, c_md);
  make_buffer(l.running_var, c_md);

  const bool fuse = relu_fused(out);
  const bool sync = d.config.sync_bn;
  const auto flags = bn_flags(out);
  const auto forward_pd = [&](dnnl::normalization_flags f) {
    return STOKER_DNNL(dnnl::batch_normalization_forward::primitive_desc(
        d.engine, prop_kind::forward_training, d.md[in], d.md[in], float(l.eps), f, attr));
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
  add_host(d.forward_train, l.name + " running statistics",
           running_statistics(l, lm, per_channel, s.c));
  forward_batchnorm_eval(l);
}

// The host step after a batch norm's training forward. torch's running statistics: the
// unbiased batch variance, momentum as the new weight.
std::function<void()> Planner::running_statistics(const Layer& l, const LayerMemory& lm,
                                                  int64_t per_channel, int64_t channels) {
  float* running_mean = static_cast<float*>(handle(param(l.running_mean).value));
  float* running_var = static_cast<float*>(handle(param(l.running_var).value));
  const float* mean = static_cast<const float*>(handle(lm.mean));
  const float* var = static_cast<const float*>(handle(lm.variance));
  int64_t* count = l.num_batches_tracked >= 0 ? &param(l.num_batches_tracked).count : nullptr;
  const float m = float(l.momentum);
  // Sync BN: over the global batch, as torch's SyncBatchNorm.
  const int64_t global = per_channel * (d.config.sync_bn ? world() : 1);
  const float unbias = float(global) / float(global - 1);
  bool* nonfinite = &d.nonfinite_statistics;
  return [=] {
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
  };
}

// Inference: the running statistics as given ones.
void Planner::forward_batchnorm_eval(const Layer& l) {
  const int in = l.inputs[0], out = l.output;
  const ParamMemory &w = param(l.weight), &b = param(l.bias_param);
  const auto eval_pd = STOKER_DNNL(dnnl::batch_normalization_forward::primitive_desc(
      d.engine, prop_kind::forward_inference, d.md[in], d.md[in], float(l.eps),
      bn_flags(out) | dnnl::normalization_flags::use_global_stats, attr));
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
std::function<void()> Planner::sync_statistics(memory mean_m, memory var_m, int64_t channels,
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

void Planner::backward_batchnorm(size_t i, const Layer& l) {
  const int in = l.inputs[0], out = l.output;
  const LayerMemory& lm = d.layers[i];
  const bool fuse = relu_fused(out);
  const bool sync = d.config.sync_bn;
  // Sync BN: dx with the global statistics as constants, then the correction below.
  const auto flags =
      sync ? bn_flags(out) | dnnl::normalization_flags::use_global_stats : bn_flags(out);
  const auto pd = STOKER_DNNL(dnnl::batch_normalization_backward::primitive_desc(
      d.engine, prop_kind::backward, d.md[in], d.md[out], d.md[in], float(l.eps), flags, lm.bn_fwd,
      attr));
  const memory target = gradient_target(in);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, d.act[in]},
                                          {DNNL_ARG_MEAN, lm.mean},
                                          {DNNL_ARG_VARIANCE, lm.variance},
                                          {DNNL_ARG_DIFF_DST, d.dact[out]},
                                          {DNNL_ARG_SCALE, param(l.weight).value},
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
void Planner::sync_backward(size_t i, const Layer& l, const memory& target) {
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
      d.engine, algorithm::binary_mul, d.md[size_t(in)], per_channel, target.get_desc(), with_ops));
  add(d.backward, l.name + " sync correction", pd, STOKER_DNNL(dnnl::binary(pd)),
      {{DNNL_ARG_SRC_0, d.act[size_t(in)]},
       {DNNL_ARG_SRC_1, a_m},
       {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, b_m},
       {DNNL_ARG_DST, target}});
}

}  // namespace stoker::cpu::planning
