// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/grad_slots.h"

#include <algorithm>
#include <numeric>

#include "common/error.h"

namespace stoker::gpu {

int64_t GradSlots::total() const {
  return std::accumulate(slot_bytes.begin(), slot_bytes.end(), int64_t(0));
}

GradSlots plan_grad_slots(std::span<const GradUse> uses) {
  std::vector<size_t> order(uses.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return uses[a].bytes > uses[b].bytes; });
  GradSlots out;
  out.slot_of.assign(uses.size(), -1);
  std::vector<std::vector<size_t>> held;  // per slot: the uses placed in it
  for (size_t u : order) {
    const GradUse& g = uses[u];
    STOKER_CHECK(g.lo <= g.hi);
    size_t s = 0;
    for (; s < held.size(); ++s) {
      const bool free = std::none_of(held[s].begin(), held[s].end(), [&](size_t v) {
        return uses[v].lo <= g.hi && g.lo <= uses[v].hi;
      });
      if (free) break;
    }
    if (s == held.size()) {
      held.emplace_back();
      out.slot_bytes.push_back(g.bytes);
    }
    held[s].push_back(u);
    out.slot_of[u] = int(s);
  }
  return out;
}

int in_place_over(const Network& net, std::span<const int> readers, size_t t) {
  if (t == 0) return -1;
  const Layer& producer = net.layers[t - 1];
  if (producer.kind != LayerKind::relu && producer.kind != LayerKind::add) return -1;
  const int in = producer.inputs[0];
  return in > 0 && readers[size_t(in)] == 1 ? in : -1;
}

std::vector<int> fused_late_writers(const Network& net) {
  std::vector<int> late(net.tensors.size(), -1);
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const Layer& l = net.layers[i];
    if (l.kind != LayerKind::batchnorm) continue;
    for (size_t a = i + 1; a < net.layers.size(); ++a)
      if (net.layers[a].kind == LayerKind::add && net.layers[a].inputs[0] == l.output)
        late[size_t(l.inputs[0])] = int(a);
  }
  return late;
}

std::vector<GradUse> grad_uses(const Network& net, std::span<const int> root,
                               std::span<const int64_t> bytes, std::span<const int> late,
                               std::vector<int>* use_of) {
  const size_t count = net.tensors.size();
  STOKER_CHECK(root.size() == count && bytes.size() == count && late.size() == count);
  // Tensor t (t >= 1) is produced by layer t - 1 and read by the layers that take it.
  std::vector<int> last_reader(count, -1);
  for (size_t i = 0; i < net.layers.size(); ++i)
    for (int in : net.layers[i].inputs)
      last_reader[size_t(in)] = std::max(last_reader[size_t(in)], int(i));
  std::vector<GradUse> uses;
  std::vector<int> of_root(count, -1);
  use_of->assign(count, -1);
  for (size_t t = 1; t < count; ++t) {
    const int r = root[t];
    if (r < 0) continue;
    const int lo = int(t) - 1, hi = std::max({last_reader[t], late[t], lo});
    if (of_root[size_t(r)] < 0) {
      of_root[size_t(r)] = int(uses.size());
      uses.push_back({bytes[size_t(r)], lo, hi});
    } else {
      GradUse& u = uses[size_t(of_root[size_t(r)])];
      u.lo = std::min(u.lo, lo);
      u.hi = std::max(u.hi, hi);
    }
    (*use_of)[t] = of_root[size_t(r)];
  }
  return uses;
}

}  // namespace stoker::gpu
