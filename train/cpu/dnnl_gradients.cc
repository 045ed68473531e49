// SPDX-License-Identifier: Apache-2.0
// The gradients' memory: which activation gradients share one memory, every trainable
// gradient in one arena in the backward's order, and its all-reduce buckets.
// Part of the planner (dnnl_plan.h).
#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "train/cpu/dnnl_plan.h"

namespace stoker::cpu::planning {

// Where a layer writes the gradient of tensor `id`, and what to run after it.
memory Planner::gradient_target(int id) {
  if (!written[size_t(id)]) return d.dact[size_t(id)];
  return STOKER_DNNL(memory(d.md[size_t(id)], d.engine, handle(d.accumulate_storage)));
}

void Planner::gradient_written(int id, const memory& target, const std::string& what) {
  if (target.get_data_handle() != d.dact[size_t(id)].get_data_handle())
    add_sum(d.backward, what + " gradient sum", d.dact[size_t(id)], target, d.dact[size_t(id)]);
  written[size_t(id)] = true;
}

int Planner::find(int t) {
  while (parent[size_t(t)] != t) t = parent[size_t(t)] = parent[size_t(parent[size_t(t)])];
  return t;
}

void Planner::share_gradients() {
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
  for (const Op& op : d.lowering.ops) {
    if (op.kind != OpKind::bn_relu) continue;
    const int t = op.hidden[0], relu = op.output;
    STOKER_CHECK(find(t) == t && find(relu) == relu);
    parent[size_t(relu)] = t;
    d.grad_final[size_t(t)] = false;  // holds the ReLU output's gradient, before the mask
    d.grad_final[size_t(relu)] = true;
  }
}

// Every trainable gradient into grad_arena, in the order the backward finishes them; with a
// collective of world > 1, buckets of about config.bucket_bytes over that order, each with
// a host step right after the last step that writes or reads one of its gradients.
void Planner::arrange_gradients() {
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

}  // namespace stoker::cpu::planning
