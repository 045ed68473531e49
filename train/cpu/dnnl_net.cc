// SPDX-License-Identifier: Apache-2.0
// Planning of dnnl_net.h in two passes. Pass 1 walks the layers forward: each layer's
// forward primitive takes its input in the producer's layout and picks its output layout
// (and, for conv and fc, the weights' layout); this fixes every tensor's layout. Pass 2
// walks them backward: gradients take the layout of the tensor they belong to, so no
// activation is ever reordered inside a step. A tensor read by two layers (a block's input:
// residual branch and shortcut) gets the first gradient written in place and the second one
// added to it.
// This file holds the two passes and the planner's buffers and steps; each layer kind's
// forward and backward is in a file of its own (dnnl_plan.h lists them).
#include "train/cpu/dnnl_net.h"

#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <cstring>

#include "common/clock.h"
#include "common/error.h"
#include "train/cpu/dnnl_check.h"
#include "train/cpu/dnnl_plan.h"

namespace stoker::cpu {
namespace planning {

// Zeroed, so that the padding of blocked layouts starts (and, through SGD, stays) zero.
memory Planner::alloc(const memory::desc& md) {
  memory m = STOKER_DNNL(memory(md, d.engine));
  std::memset(handle(m), 0, md.get_size());
  return m;
}

void Planner::add_reorder(std::vector<Step>& program, std::string what, const memory& from,
                          const memory& to) {
  const auto pd = STOKER_DNNL(dnnl::reorder::primitive_desc(from, to, attr));
  add(program, std::move(what), pd, STOKER_DNNL(dnnl::reorder(pd)),
      {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

void Planner::add_host(std::vector<Step>& program, std::string what, std::function<void()> f) {
  Step s;
  s.what = std::move(what);
  s.impl = "host";
  s.host = std::move(f);
  program.push_back(std::move(s));
}

// dst = src0 + src1 (dst may be src0).
void Planner::add_sum(std::vector<Step>& program, std::string what, const memory& src0,
                      const memory& src1, const memory& dst) {
  const auto pd = STOKER_DNNL(dnnl::binary::primitive_desc(
      d.engine, algorithm::binary_add, src0.get_desc(), src1.get_desc(), dst.get_desc(), attr));
  add(program, std::move(what), pd, STOKER_DNNL(dnnl::binary(pd)),
      {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}});
}

// A trainable f32 parameter in the layout `master` (gradient and momentum alike).
void Planner::make_trainable(int index, const memory::desc& master, const memory::desc& plain) {
  ParamMemory& p = param(index);
  p.value = alloc(master);
  // Bound to its place in grad_arena once the backward's order is known (arrange_gradients).
  p.grad = STOKER_DNNL(memory(master, d.engine, DNNL_MEMORY_NONE));
  p.momentum = alloc(master);
  p.plain = plain;
}

void Planner::make_buffer(int index, const memory::desc& plain) {
  ParamMemory& p = param(index);
  p.value = alloc(plain);
  p.plain = plain;
}

void Planner::set_output(int id, const memory::desc& md) {
  d.md[size_t(id)] = md;
  d.act[size_t(id)] = alloc(md);
}

// The weights a primitive wants as `wanted`: the master itself, or a copy refreshed by a
// reorder at the start of each step that reads it.
memory Planner::weights_for(const memory& master, const memory::desc& wanted,
                            const std::string& what, std::vector<std::vector<Step>*> programs) {
  if (wanted == master.get_desc()) return master;
  memory copy = alloc(wanted);
  for (auto* program : programs) add_reorder(*program, what + " weights reorder", master, copy);
  ++d.reorders_per_step;
  return copy;
}

void Planner::plan() {
  const size_t tensors = d.shapes.size();
  d.md.resize(tensors);
  d.act.resize(tensors);
  d.dact.resize(tensors);
  d.layers.resize(d.net.layers.size());
  d.params.resize(d.net.params.size());
  d.lowering = lower(d.net, d.config.fusions & kCpuFusions);
  forward_pass();
  forward_loss();
  // Pass 2, with every layout known.
  share_gradients();
  backward_pass();
  arrange_gradients();
  share_scratchpad();
}

// The tensor `to` is `from`'s memory (a ReLU computed in place by the op that wrote `from`).
void Planner::alias(int from, int to) {
  d.md[size_t(to)] = d.md[size_t(from)];
  d.act[size_t(to)] = d.act[size_t(from)];
}

// One op's forward: its layers' in the order they compute (train/lowering.h).
void Planner::forward_op(const Op& op) {
  const size_t i = size_t(op.layers.front());
  const Layer& l = d.net.layers[i];
  switch (op.kind) {
    case OpKind::conv:
      return forward_conv(i, l);
    case OpKind::batchnorm:
      return forward_batchnorm(i, l);
    case OpKind::bn_relu:  // one primitive (fuse_norm_relu): the ReLU's output is its own
      forward_batchnorm(i, l);
      return alias(op.hidden[0], op.output);
    case OpKind::bn_add_relu:
      forward_batchnorm(i, l);
      return forward_add_relu(op);
    case OpKind::relu:
      return forward_relu(i, l);
    case OpKind::maxpool:
    case OpKind::global_avgpool:
      return forward_pool(i, l);
    case OpKind::fc:
      return forward_fc(i, l);
    case OpKind::add:
      return forward_add(l);
  }
}

// Pass 1. The images arrive plain (NCHW or NHWC f32) and are reordered into the first conv's
// layout; the conv that reads tensor 0 plans it, so its step goes first.
void Planner::forward_pass() {
  const memory::desc user(dims(0), dt::f32,
                          d.config.input.layout == Layout::nhwc ? tag::nhwc : tag::nchw);
  d.images_user = STOKER_DNNL(memory(user, d.engine, DNNL_MEMORY_NONE));
  for (const Op& op : d.lowering.ops) {
    const Layer& l = first_layer(d.net, op);
    try {
      forward_op(op);
    } catch (const Error& e) {
      fail("{} (oneDNN plan): layer {} ({}): {}", d.net.name, l.name, op_name(op.kind), e.what());
    }
    if (&op == &d.lowering.ops.front()) {
      STOKER_CHECK_MSG(l.inputs[0] == 0, "the first layer must read the images");
      for (auto* program : {&d.forward_train, &d.forward_eval}) {
        std::vector<Step> edge;
        add_reorder(edge, "images to the first layer's layout", d.images_user, d.act[0]);
        program->insert(program->begin(), std::move(edge.front()));
      }
    }
  }
}

// Pass 2: the gradients' memory (share_gradients decided which share), then every layer's
// backward from the last.
void Planner::backward_pass() {
  const size_t tensors = d.shapes.size();
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
  for (size_t o = d.lowering.ops.size(); o-- > 0;) {
    const Op& op = d.lowering.ops[o];
    try {
      backward_op(op);
    } catch (const Error& e) {
      fail("{} (oneDNN plan): layer {} ({}) backward: {}", d.net.name, first_layer(d.net, op).name,
           op_name(op.kind), e.what());
    }
  }
}

// One op's backward: its layers' from the last.
void Planner::backward_op(const Op& op) {
  const size_t i = size_t(op.layers.front());
  const Layer& l = d.net.layers[i];
  switch (op.kind) {
    case OpKind::conv:
      return backward_conv(i, l);
    case OpKind::batchnorm:
      return backward_batchnorm(i, l);
    case OpKind::bn_relu:  // the batch norm's backward applies the ReLU's mask
      return backward_batchnorm(i, l);
    case OpKind::bn_add_relu: {
      const size_t relu = size_t(op.layers[2]);
      backward_relu(relu, d.net.layers[relu]);
      backward_add(d.net.layers[size_t(op.layers[1])]);
      return backward_batchnorm(i, l);
    }
    case OpKind::relu:
      return backward_relu(i, l);
    case OpKind::maxpool:
    case OpKind::global_avgpool:
      return backward_pool(i, l);
    case OpKind::fc:
      return backward_fc(i, l);
    case OpKind::add:
      return backward_add(l);
  }
}

// One scratchpad for every primitive: they run one at a time. Then the C argument arrays,
// built once: the C++ execute() would build them from the map on every call, an allocation
// per primitive per step.
void Planner::share_scratchpad() {
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
  for (auto* program : {&d.forward_train, &d.forward_eval, &d.backward})
    for (Step& s : *program)
      for (const auto& [arg, m] : s.args) s.exec_args.push_back({arg, m.get()});
}

}  // namespace planning

using planning::dt;
using planning::memory;
using planning::tag;

std::unique_ptr<DnnlNet> plan_dnnl_net(const Network& net, const BackendConfig& config) {
  const ConvAlgorithm& a = config.conv_algorithm;
  // oneDNN 3 dropped its x86 Winograd kernels (2.6 had them for AVX-512): refused by name,
  // not quietly planned as direct.
  if (a.kind == ConvAlgorithm::Kind::exhaustive ||
      (a.kind == ConvAlgorithm::Kind::fixed && a.fixed != "direct")) {
    fail(
        "{} (oneDNN): convolution algorithm '{}' is not offered on the CPU: expected heuristic "
        "or fixed:direct{}",
        net.name, a,
        a.kind == ConvAlgorithm::Kind::exhaustive ? " (exhaustive search is cuda only)"
        : a.fixed == "winograd"
            ? " (oneDNN 3 has no Winograd convolution on x86 CPUs; a run saved with it resumes "
              "with --conv-algo fixed:direct)"
            : "");
  }
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
  if (config.input.dtype == DType::u8)
    d.images_f32.assign(size_t(config.batch * 3 * config.height * config.width), 0.f);
  planning::Planner(d).plan();
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
  if (gradient ? id == 0 || !d.grad_final[size_t(id)] : bool(d.lowering.hidden[size_t(id)]))
    return {};
  const memory& m = gradient ? d.dact[size_t(id)] : d.act[size_t(id)];
  const memory::dims dims = m.get_desc().get_dims();
  const memory::desc plain(dims, dt::f32, dims.size() == 2 ? tag::nc : tag::nchw);
  std::vector<float> out(plain.get_size() / sizeof(float));
  memory user = STOKER_DNNL(memory(plain, d.engine, out.data()));
  memory src = m;
  STOKER_DNNL(dnnl::reorder(src, user).execute(d.stream, src, user));
  STOKER_DNNL(d.stream.wait());
  return out;
}

}  // namespace stoker::cpu
