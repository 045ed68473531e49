// SPDX-License-Identifier: Apache-2.0
// lower(): finds each pattern from its batch norm by the readers of the tensors it writes,
// then emits one op per pattern at its last layer and one per remaining layer.
#include "train/lowering.h"

#include <array>
#include <utility>

#include "common/error.h"

namespace stoker {

std::string_view op_name(OpKind kind) {
  switch (kind) {
    case OpKind::conv:
      return "conv";
    case OpKind::batchnorm:
      return "batchnorm";
    case OpKind::bn_relu:
      return "bn_relu";
    case OpKind::bn_add_relu:
      return "bn_add_relu";
    case OpKind::relu:
      return "relu";
    case OpKind::add:
      return "add";
    case OpKind::maxpool:
      return "maxpool";
    case OpKind::global_avgpool:
      return "global_avgpool";
    case OpKind::fc:
      return "fc";
  }
  return "?";
}

namespace {

constexpr std::array<std::pair<Fusion, std::string_view>, 4> kFusionNames = {{
    {kFuseBnRelu, "bn_relu"},
    {kFuseBnAddRelu, "bn_add_relu"},
    {kFuseConvStats, "conv_stats"},
    {kFuseConvPrologue, "conv_prologue"},
}};

}  // namespace

uint32_t parse_fusions(std::string_view list) {
  if (list == "none") return 0;
  uint32_t bits = 0;
  size_t at = 0;
  while (true) {
    const size_t comma = list.find(',', at);
    const std::string_view word =
        list.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
    bool known = false;
    for (const auto& [bit, name] : kFusionNames)
      if (word == name) {
        bits |= bit;
        known = true;
      }
    if (!known)
      fail(
          "unknown fusion '{}' in '{}': expected a comma-separated list of bn_relu, "
          "bn_add_relu, conv_stats, or none",
          word, list);
    if (comma == std::string_view::npos) return bits;
    at = comma + 1;
  }
}

std::string fusions_name(uint32_t fusions) {
  std::string out;
  for (const auto& [bit, name] : kFusionNames)
    if ((fusions & bit) != 0) {
      if (!out.empty()) out += ',';
      out += name;
    }
  return out.empty() ? "none" : out;
}

namespace {

OpKind single_kind(LayerKind k) {
  switch (k) {
    case LayerKind::conv:
      return OpKind::conv;
    case LayerKind::batchnorm:
      return OpKind::batchnorm;
    case LayerKind::relu:
      return OpKind::relu;
    case LayerKind::maxpool:
      return OpKind::maxpool;
    case LayerKind::global_avgpool:
      return OpKind::global_avgpool;
    case LayerKind::fc:
      return OpKind::fc;
    case LayerKind::add:
      return OpKind::add;
  }
  return OpKind::relu;
}

// Per tensor id: the layers that read it.
std::vector<std::vector<int>> readers_of(const Network& net) {
  std::vector<std::vector<int>> readers(net.tensors.size());
  for (size_t i = 0; i < net.layers.size(); ++i)
    for (int t : net.layers[i].inputs) readers[size_t(t)].push_back(int(i));
  return readers;
}

// The one layer reading tensor t, when it is of kind k (and reads it once); else -1.
int sole_reader(const Network& net, const std::vector<std::vector<int>>& readers, int t,
                LayerKind k) {
  const std::vector<int>& r = readers[size_t(t)];
  if (r.size() != 1 || net.layers[size_t(r[0])].kind != k) return -1;
  return r[0];
}

// The pattern that starts at batch norm `bn`, as its op (layers, kind), or an empty op.
Op pattern_at(const Network& net, const std::vector<std::vector<int>>& readers, int bn,
              uint32_t fusions) {
  const Layer& l = net.layers[size_t(bn)];
  Op op;
  if (const int relu = sole_reader(net, readers, l.output, LayerKind::relu);
      relu >= 0 && (fusions & kFuseBnRelu) != 0) {
    op.kind = OpKind::bn_relu;
    op.layers = {bn, relu};
    op.inputs = {l.inputs[0]};
    op.hidden = {l.output};
    op.output = net.layers[size_t(relu)].output;
    return op;
  }
  const int add = sole_reader(net, readers, l.output, LayerKind::add);
  if (add < 0 || (fusions & kFuseBnAddRelu) == 0) return op;
  const Layer& a = net.layers[size_t(add)];
  // The batch norm is the residual branch (the add's first input); the shortcut is another
  // tensor, computed before the add.
  if (a.inputs.size() != 2 || a.inputs[0] != l.output || a.inputs[1] == l.output) return op;
  const int relu = sole_reader(net, readers, a.output, LayerKind::relu);
  if (relu < 0) return op;
  op.kind = OpKind::bn_add_relu;
  op.layers = {bn, add, relu};
  op.inputs = {l.inputs[0], a.inputs[1]};
  op.hidden = {l.output, a.output};
  op.output = net.layers[size_t(relu)].output;
  return op;
}

bool is_bn_op(OpKind k) {
  return k == OpKind::batchnorm || k == OpKind::bn_relu || k == OpKind::bn_add_relu;
}

// kFuseConvStats on a settled op list: each batch norm op whose input a conv op writes and only
// it reads takes its statistics from that conv, where `accept` takes both (the conv, then the
// batch norm's op, each with its flag set).
void fuse_conv_stats(const Network& net, const std::vector<std::vector<int>>& readers,
                     const AcceptPattern& accept, Lowering& low) {
  std::vector<int> op_writing(net.tensors.size(), -1);
  for (size_t o = 0; o < low.ops.size(); ++o) op_writing[size_t(low.ops[o].output)] = int(o);
  for (Op& bn : low.ops) {
    if (!is_bn_op(bn.kind)) continue;
    const int x = bn.inputs[0];
    const int w = op_writing[size_t(x)];
    if (w < 0 || readers[size_t(x)].size() != 1) continue;
    Op& conv = low.ops[size_t(w)];
    if (conv.kind != OpKind::conv) continue;
    conv.stats_epilogue = bn.stats_given = true;
    if (accept && !(accept(conv) && accept(bn))) conv.stats_epilogue = bn.stats_given = false;
  }
}

// kFuseConvPrologue after conv_stats: each bn_relu op that takes its statistics and whose
// output one conv alone reads hands its apply to that conv, where `accept` takes both (the
// conv, then the bn_relu, each with its flag set).
void fuse_conv_prologue(const std::vector<std::vector<int>>& readers, const AcceptPattern& accept,
                        Lowering& low) {
  for (Op& bn : low.ops) {
    if (bn.kind != OpKind::bn_relu || !bn.stats_given) continue;
    const std::vector<int>& r = readers[size_t(bn.output)];
    if (r.size() != 1) continue;
    Op& conv = low.ops[size_t(low.op_of_layer[size_t(r[0])])];
    if (conv.kind != OpKind::conv) continue;
    conv.prologue = bn.apply_in_reader = true;
    if (accept && !(accept(conv) && accept(bn))) conv.prologue = bn.apply_in_reader = false;
  }
}

}  // namespace

Lowering lower(const Network& net, uint32_t fusions, const AcceptPattern& accept) {
  const size_t layers = net.layers.size();
  const std::vector<std::vector<int>> readers = readers_of(net);
  Lowering out;
  out.op_of_layer.assign(layers, -1);
  out.hidden.assign(net.tensors.size(), false);
  // Patterns first, by their batch norm: each layer joins at most one (a fused tensor has
  // one reader, so two patterns never share a layer).
  std::vector<Op> pattern_ending_at(layers);
  std::vector<bool> in_pattern(layers, false);
  for (size_t i = 0; i < layers; ++i) {
    if (net.layers[i].kind != LayerKind::batchnorm) continue;
    Op op = pattern_at(net, readers, int(i), fusions);
    if (op.layers.empty() || (accept && !accept(op))) continue;
    for (int k : op.layers) {
      STOKER_CHECK_MSG(!in_pattern[size_t(k)], "{}: layer {} in two fused patterns", net.name,
                       net.layers[size_t(k)].name);
      in_pattern[size_t(k)] = true;
    }
    pattern_ending_at[size_t(op.layers.back())] = std::move(op);
  }
  for (size_t i = 0; i < layers; ++i) {
    Op op;
    if (!pattern_ending_at[i].layers.empty()) {
      op = std::move(pattern_ending_at[i]);
    } else if (in_pattern[i]) {
      continue;  // runs with its pattern, at the pattern's last layer
    } else {
      const Layer& l = net.layers[i];
      op.kind = single_kind(l.kind);
      op.layers = {int(i)};
      op.inputs = l.inputs;
      op.output = l.output;
    }
    for (int k : op.layers) out.op_of_layer[size_t(k)] = int(out.ops.size());
    for (int t : op.hidden) out.hidden[size_t(t)] = true;
    out.ops.push_back(std::move(op));
  }
  if ((fusions & kFuseConvStats) != 0) fuse_conv_stats(net, readers, accept, out);
  if ((fusions & kFuseConvStats) != 0 && (fusions & kFuseConvPrologue) != 0)
    fuse_conv_prologue(readers, accept, out);
  return out;
}

}  // namespace stoker
