// SPDX-License-Identifier: Apache-2.0
// The planner of dnnl_net.h, shared by its files: one per layer kind (dnnl_conv.cc,
// dnnl_batchnorm.cc, dnnl_pool.cc, dnnl_activation.cc, dnnl_fc.cc), the gradients' memory
// (dnnl_gradients.cc) and the two passes over the network (dnnl_net.cc). Internal to
// train/cpu: nothing outside plans through it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "train/cpu/dnnl_check.h"
#include "train/cpu/dnnl_net.h"

namespace stoker::cpu::planning {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using tag = memory::format_tag;
using dt = memory::data_type;

inline const auto kScaleShift = dnnl::normalization_flags::use_scale |  //
                                dnnl::normalization_flags::use_shift;

inline void* handle(const memory& m) {
  return STOKER_DNNL(m.get_data_handle());
}

// Planning in two passes (dnnl_net.cc): every layer's forward (pass 1), then its backward
// (pass 2), each written by the file of its layer kind.
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

  ParamMemory& param(int index) { return d.params[size_t(index)]; }

  // The ranks whose batches make one: 1 without a collective.
  int world() const { return d.config.collective != nullptr ? d.config.collective->world() : 1; }

  // Global average pooling is one window over the whole input; maxpool pads with -inf,
  // which is oneDNN's "padding is never the maximum".
  struct PoolGeometry {
    algorithm algo;
    memory::dims kernel, strides, pad;
  };

  // dnnl_net.cc: buffers, steps, parameters, and the passes.
  memory alloc(const memory::desc& md);
  void add_reorder(std::vector<Step>& program, std::string what, const memory& from,
                   const memory& to);
  void add_host(std::vector<Step>& program, std::string what, std::function<void()> f);
  void add_sum(std::vector<Step>& program, std::string what, const memory& src0, const memory& src1,
               const memory& dst);
  void make_trainable(int index, const memory::desc& master, const memory::desc& plain);
  void make_buffer(int index, const memory::desc& plain);
  void set_output(int id, const memory::desc& md);
  memory weights_for(const memory& master, const memory::desc& wanted, const std::string& what,
                     std::vector<std::vector<Step>*> programs);
  void plan();
  void alias(int from, int to);
  void forward_op(const Op& op);
  void backward_op(const Op& op);
  void forward_pass();
  void backward_pass();
  void share_scratchpad();

  // dnnl_conv.cc
  algorithm preferred_conv_algo() const;
  void forward_conv(size_t i, const Layer& l);
  void backward_conv(size_t i, const Layer& l);

  // dnnl_batchnorm.cc
  bool relu_fused(int out) const;
  dnnl::normalization_flags bn_flags(int out) const;
  void forward_batchnorm(size_t i, const Layer& l);
  std::function<void()> running_statistics(const Layer& l, const LayerMemory& lm,
                                           int64_t per_channel, int64_t channels);
  void forward_batchnorm_eval(const Layer& l);
  std::function<void()> sync_statistics(memory mean_m, memory var_m, int64_t channels,
                                        int64_t per_channel);
  void backward_batchnorm(size_t i, const Layer& l);
  void sync_backward(size_t i, const Layer& l, const memory& target);

  // dnnl_pool.cc
  PoolGeometry pool_geometry(const Layer& l) const;
  void forward_pool(size_t i, const Layer& l);
  void backward_pool(size_t i, const Layer& l);

  // dnnl_activation.cc: ReLU and the residual add; the add with its ReLU (bn_add_relu)
  void forward_relu(size_t i, const Layer& l);
  void backward_relu(size_t i, const Layer& l);
  void forward_add(const Layer& l);
  void forward_add_relu(const Op& op);
  void backward_add(const Layer& l);

  // dnnl_fc.cc: the fully connected layer and the loss
  void forward_fc(size_t i, const Layer& l);
  void backward_fc(size_t i, const Layer& l);
  void forward_loss();

  // dnnl_gradients.cc: which gradients share memory, the gradient arena and its buckets
  std::vector<bool> written;  // per tensor: whether its gradient holds a first contribution
  std::vector<int> parent;    // gradients that share one memory (share_gradients)
  memory gradient_target(int id);
  void gradient_written(int id, const memory& target, const std::string& what);
  int find(int t);
  void share_gradients();
  void arrange_gradients();
};

}  // namespace stoker::cpu::planning
