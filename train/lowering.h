// SPDX-License-Identifier: Apache-2.0
// The network lowered once into the ops a backend runs: each op runs one layer, or a pattern
// of layers the backend fuses (a batch norm with the ReLU that alone reads it; a block's last
// batch norm with the residual add and the ReLU after it). Both backends (train/cpu,
// train/gpu) plan and run the same op list, forward in order and backward in reverse; which
// patterns fuse is the backend's declared caps (BackendCaps::fusions) intersected with the
// config's. Host-side only: no shapes, no library, no memory.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "models/network.h"

namespace stoker {

// Layer patterns a backend may run fused, as one kernel or primitive (BackendCaps::fusions,
// BackendConfig::fusions).
enum Fusion : uint32_t {
  kFuseBnRelu = 1u << 0,     // a batch norm and the ReLU that alone reads it
  kFuseBnAddRelu = 1u << 1,  // a batch norm, the residual add after it and the ReLU after that
  // A convolution that also writes its output's per-channel sum and sum of squares, for the
  // batch norm that alone reads the output: that batch norm turns them into its scale and
  // bias (bn_finalize) and skips its own statistics pass over the tensor.
  kFuseConvStats = 1u << 2,
  // On top of conv_stats: a bn_relu whose output a conv alone reads leaves its scale, bias and
  // ReLU to that conv, which applies them to the batch norm's input on the way in (its input
  // prologue, MLPerf's ResNet); the batch norm's output is never written, and the batch norm
  // only finalizes its statistics into that scale and bias.
  kFuseConvPrologue = 1u << 3,
};
inline constexpr uint32_t kAllFusions =
    kFuseBnRelu | kFuseBnAddRelu | kFuseConvStats | kFuseConvPrologue;
// What a plan fuses unless told otherwise (BackendConfig::fusions, --fusions): conv_stats and
// conv_prologue stay behind the option until a GPU run has shown them right and faster
// (issue 45).
inline constexpr uint32_t kDefaultFusions = kFuseBnRelu | kFuseBnAddRelu;

// The one vocabulary of --fusions and the stored run options: a comma-separated list of
// bn_relu, bn_add_relu, conv_stats, conv_prologue, or "none". parse_fusions throws stoker::Error
// naming the word it does not know; fusions_name gives the canonical list ("none" for 0).
uint32_t parse_fusions(std::string_view list);
std::string fusions_name(uint32_t fusions);

enum class OpKind {
  conv,
  batchnorm,
  bn_relu,      // relu(bn(x))
  bn_add_relu,  // relu(bn(x) + z): z is the block's shortcut
  relu,
  add,
  maxpool,
  global_avgpool,
  fc,
};
std::string_view op_name(OpKind kind);

struct Op {
  OpKind kind = OpKind::relu;
  // Network::layers indices, in the network's order: one layer, or the pattern's (bn_relu:
  // batch norm, ReLU; bn_add_relu: batch norm, add, ReLU).
  std::vector<int> layers;
  // Tensor ids read from other ops (or the images): the first layer's inputs; bn_add_relu:
  // the batch norm's input, then the shortcut z.
  std::vector<int> inputs;
  int output = -1;  // the tensor it writes: its last layer's output
  // Tensors its layers write that no other op reads (bn_relu: the batch norm's output;
  // bn_add_relu: the batch norm's and the add's). A backend need not keep them.
  std::vector<int> hidden;
  // conv under kFuseConvStats: it also writes its output's per-channel sum and sum of squares
  // (the statistics of the batch norm that alone reads the output).
  bool stats_epilogue = false;
  // batchnorm, bn_relu, bn_add_relu: its batch statistics come from the conv that writes its
  // input (stats_epilogue); it finalizes them into scale and bias and only applies them.
  bool stats_given = false;
  // kFuseConvPrologue. conv: its input is the output of a bn_relu with apply_in_reader; it
  // reads that op's input instead and computes relu(x * scale + bias) on the way in (and
  // in its backward, the ReLU's gradient with its data gradient). bn_relu (stats_given): it
  // only finalizes; its output is never written, and the gradient its reader hands it is at
  // the ReLU's input.
  bool prologue = false;
  bool apply_in_reader = false;
};

struct Lowering {
  // In an order that computes every op's inputs before it: each op sits where its last layer
  // sat (a bn_add_relu at its ReLU, after the shortcut's own layers).
  std::vector<Op> ops;
  std::vector<int> op_of_layer;  // per layer: the op that runs it
  std::vector<bool> hidden;      // per tensor id: some op's hidden tensor
};

// Every layer in exactly one op, fusing the patterns in `fusions` (Fusion bits) wherever the
// network's tensors allow it (a fused tensor has no reader outside its op) and `accept` takes
// the instance (a backend's per-shape offer); a pattern not taken runs as its layers' ops.
// kFuseConvStats is asked once the batch norms' ops are settled: `accept` sees the conv op with
// stats_epilogue set, then the batch norm's op with stats_given set; a refusal of either
// leaves both as they were. kFuseConvPrologue last, on the bn_relu ops that took their
// statistics: `accept` sees the reading conv with prologue set, then the bn_relu with
// apply_in_reader set; likewise.
using AcceptPattern = std::function<bool(const Op& pattern)>;
Lowering lower(const Network& net, uint32_t fusions, const AcceptPattern& accept = {});

// The op that runs layer `layer`.
inline const Op& op_of(const Lowering& low, int layer) {
  return low.ops[size_t(low.op_of_layer[size_t(layer)])];
}

// The op's first layer (a pattern's batch norm), and its last.
inline const Layer& first_layer(const Network& net, const Op& op) {
  return net.layers[size_t(op.layers.front())];
}
inline const Layer& last_layer(const Network& net, const Op& op) {
  return net.layers[size_t(op.layers.back())];
}

}  // namespace stoker
