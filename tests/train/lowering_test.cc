// SPDX-License-Identifier: Apache-2.0
// train/lowering.h on every ResNet and on small hand-made graphs: which patterns fuse with
// each set of fusion bits, that every layer runs in exactly one op, that every op's inputs are
// computed before it, and that a tensor with a reader outside the pattern is never fused.
#include "train/lowering.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/error.h"
#include "models/resnet.h"

namespace stoker {
namespace {

Network resnet(int depth) {
  ResNetConfig c;
  c.depth = depth;
  c.num_classes = 10;
  return build_resnet(c);
}

std::map<OpKind, int> counts(const Lowering& low) {
  std::map<OpKind, int> n;
  for (const Op& op : low.ops) ++n[op.kind];
  return n;
}

// What every lowering must be, whatever fused: each layer in one op, the ops in an order that
// computes their inputs first, a hidden tensor read by no other op, and every other tensor a
// layer writes the output of the op that writes it.
void expect_well_formed(const Network& net, const Lowering& low, const std::string& what) {
  std::vector<int> seen(net.layers.size(), 0);
  std::vector<bool> ready(net.tensors.size(), false);
  ready[0] = true;
  for (size_t o = 0; o < low.ops.size(); ++o) {
    const Op& op = low.ops[o];
    for (int t : op.inputs) EXPECT_TRUE(ready[size_t(t)]) << what << ": op " << o << " reads " << t;
    for (int k : op.layers) {
      ++seen[size_t(k)];
      EXPECT_EQ(low.op_of_layer[size_t(k)], int(o)) << what;
      const Layer& l = net.layers[size_t(k)];
      for (int t : l.inputs) {  // inside the op: its own layers' outputs, or its inputs
        const bool own = low.hidden[size_t(t)] && low.op_of_layer[size_t(t - 1)] == int(o);
        EXPECT_TRUE(own || ready[size_t(t)]) << what << ": " << l.name;
      }
    }
    EXPECT_EQ(op.output, last_layer(net, op).output) << what;
    ready[size_t(op.output)] = true;
    for (int t : op.hidden) {
      EXPECT_NE(t, op.output) << what;
      ready[size_t(t)] = true;
    }
  }
  for (size_t k = 0; k < net.layers.size(); ++k)
    EXPECT_EQ(seen[k], 1) << what << ": " << net.layers[k].name;
  for (size_t i = 0; i < net.layers.size(); ++i)
    for (int t : net.layers[i].inputs)
      if (low.hidden[size_t(t)]) {
        EXPECT_EQ(low.op_of_layer[i], low.op_of_layer[size_t(t - 1)])
            << what << ": hidden tensor " << net.tensors[size_t(t)] << " read by "
            << net.layers[i].name;
      }
}

TEST(Lowering, ResNet50FusesEveryBatchNormButTheShortcuts) {
  const Network net = resnet(50);
  const Lowering low = lower(net, kAllFusions);
  expect_well_formed(net, low, "resnet50");
  std::map<OpKind, int> n = counts(low);
  EXPECT_EQ(n[OpKind::conv], 53);
  EXPECT_EQ(n[OpKind::bn_relu], 33);      // the stem's, and bn1 and bn2 of 16 bottlenecks
  EXPECT_EQ(n[OpKind::bn_add_relu], 16);  // each bottleneck's bn3, add and ReLU
  EXPECT_EQ(n[OpKind::batchnorm], 4);     // the downsample shortcuts: read by an add as z
  EXPECT_EQ(n[OpKind::relu], 0);
  EXPECT_EQ(n[OpKind::add], 0);
  EXPECT_EQ(n[OpKind::maxpool] + n[OpKind::global_avgpool] + n[OpKind::fc], 3);
  EXPECT_EQ(int(low.ops.size()), 53 + 33 + 16 + 4 + 3);
}

TEST(Lowering, TheBlockEndsAfterItsShortcut) {
  const Network net = resnet(50);
  const Lowering low = lower(net, kAllFusions);
  // layer1.0: bn3 comes before the downsample's conv and BN in torchvision's order; the
  // fused op runs after both, and reads the downsample BN's output as z.
  const auto layer = [&](const std::string& name) {
    for (size_t i = 0; i < net.layers.size(); ++i)
      if (net.layers[i].name == name) return int(i);
    ADD_FAILURE() << name;
    return 0;
  };
  const int bn3 = layer("layer1.0.bn3"), ds = layer("layer1.0.downsample.1");
  EXPECT_LT(bn3, ds);
  const Op& op = low.ops[size_t(low.op_of_layer[size_t(bn3)])];
  ASSERT_EQ(op.kind, OpKind::bn_add_relu);
  EXPECT_GT(low.op_of_layer[size_t(bn3)], low.op_of_layer[size_t(ds)]);
  ASSERT_EQ(op.inputs.size(), 2u);
  EXPECT_EQ(op.inputs[0], net.layers[size_t(bn3)].inputs[0]);
  EXPECT_EQ(op.inputs[1], net.layers[size_t(ds)].output);
  EXPECT_EQ(op.hidden.size(), 2u);
  // layer1.1: the shortcut is the block's input, a ReLU output read twice (conv1 and the add).
  const Op& id = low.ops[size_t(low.op_of_layer[size_t(layer("layer1.1.bn3"))])];
  ASSERT_EQ(id.kind, OpKind::bn_add_relu);
  EXPECT_EQ(id.inputs[1], net.layers[size_t(layer("layer1.1.conv1"))].inputs[0]);
}

TEST(Lowering, EachFusionBitAlone) {
  for (int depth : {18, 34, 50, 101}) {
    const Network net = resnet(depth);
    const std::string what = "resnet" + std::to_string(depth);
    int bns = 0, blocks = 0;
    for (const Layer& l : net.layers) {
      bns += l.kind == LayerKind::batchnorm;
      blocks += l.kind == LayerKind::add;
    }
    const int shortcuts = depth >= 50 ? 4 : 3;  // downsample BNs: an add's z
    const Lowering none = lower(net, 0);
    expect_well_formed(net, none, what + " unfused");
    ASSERT_EQ(none.ops.size(), net.layers.size()) << what;
    for (size_t i = 0; i < net.layers.size(); ++i) {
      EXPECT_EQ(none.ops[i].layers, std::vector<int>{int(i)}) << what;
      EXPECT_EQ(none.ops[i].inputs, net.layers[i].inputs) << what;
    }
    const Lowering relu = lower(net, kFuseBnRelu);
    expect_well_formed(net, relu, what + " bn_relu");
    std::map<OpKind, int> n = counts(relu);
    EXPECT_EQ(n[OpKind::bn_relu], bns - blocks - shortcuts) << what;
    EXPECT_EQ(n[OpKind::bn_add_relu], 0) << what;
    EXPECT_EQ(n[OpKind::add], blocks) << what;
    const Lowering add = lower(net, kFuseBnAddRelu);
    expect_well_formed(net, add, what + " bn_add_relu");
    n = counts(add);
    EXPECT_EQ(n[OpKind::bn_relu], 0) << what;
    EXPECT_EQ(n[OpKind::bn_add_relu], blocks) << what;
    EXPECT_EQ(n[OpKind::add], 0) << what;
    EXPECT_EQ(n[OpKind::relu], bns - blocks - shortcuts) << what;
  }
}

// A backend's per-instance refusal (cuDNN not offering a shape) leaves that instance unfused,
// as its layers' ops, and the others fused.
TEST(Lowering, ARefusedInstanceRunsAsItsLayers) {
  const Network net = resnet(50);
  int asked = 0;
  const Lowering low = lower(net, kFuseBnRelu | kFuseBnAddRelu, [&](const Op& op) {
    ++asked;
    return !(op.kind == OpKind::bn_add_relu && first_layer(net, op).name == "layer2.0.bn3") &&
           !(op.kind == OpKind::bn_relu && first_layer(net, op).name == "bn1");
  });
  expect_well_formed(net, low, "two refused");
  EXPECT_EQ(asked, 33 + 16);
  std::map<OpKind, int> n = counts(low);
  EXPECT_EQ(n[OpKind::bn_relu], 32);
  EXPECT_EQ(n[OpKind::bn_add_relu], 15);
  EXPECT_EQ(n[OpKind::batchnorm], 4 + 2);
  EXPECT_EQ(n[OpKind::add], 1);
  EXPECT_EQ(n[OpKind::relu], 2);
}

// kFuseConvStats: every ResNet conv feeds one batch norm alone, so each writes that batch
// norm's statistics, whatever else fuses; the batch norm ops (plain, bn_relu, bn_add_relu) take
// them. A refused conv leaves its batch norm computing its own.
TEST(Lowering, EveryConvWritesItsBatchNormsStatistics) {
  for (int depth : {18, 50}) {
    const Network net = resnet(depth);
    const std::string what = "resnet" + std::to_string(depth);
    int convs = 0, bns = 0;
    for (const Layer& l : net.layers) {
      convs += l.kind == LayerKind::conv;
      bns += l.kind == LayerKind::batchnorm;
    }
    for (const uint32_t bits : {uint32_t(kFuseConvStats), kAllFusions}) {
      const Lowering low = lower(net, bits);
      expect_well_formed(net, low, what);
      int epilogues = 0, given = 0;
      for (const Op& op : low.ops) {
        epilogues += op.stats_epilogue;
        given += op.stats_given;
        if (op.stats_epilogue) {
          EXPECT_EQ(op.kind, OpKind::conv) << what;
        }
        if (op.stats_given) {
          EXPECT_EQ(first_layer(net, op).kind, LayerKind::batchnorm) << what;
          const Op& conv = low.ops[size_t(low.op_of_layer[size_t(op.inputs[0] - 1)])];
          EXPECT_TRUE(conv.stats_epilogue) << what << ": " << first_layer(net, op).name;
        }
      }
      EXPECT_EQ(epilogues, convs) << what;
      EXPECT_EQ(given, bns) << what;
      EXPECT_EQ(counts(low), counts(lower(net, bits & ~uint32_t(kFuseConvStats)))) << what;
    }
    for (const Op& op : lower(net, kDefaultFusions).ops) {
      EXPECT_FALSE(op.stats_epilogue || op.stats_given) << what;
    }
  }
  const Network net = resnet(50);
  int asked = 0;
  const Lowering low = lower(net, kFuseConvStats, [&](const Op& op) {
    ++asked;
    EXPECT_TRUE(op.kind == OpKind::conv ? op.stats_epilogue : op.stats_given);
    return first_layer(net, op).name != "layer1.0.conv2" &&
           first_layer(net, op).name != "layer3.1.bn1";
  });
  EXPECT_EQ(asked, 53 + 52);  // each conv, and each batch norm after a conv taken
  for (const Op& op : low.ops) {
    const Layer& l = first_layer(net, op);
    if (l.kind != LayerKind::conv && l.kind != LayerKind::batchnorm) continue;
    const bool refused = l.name == "layer1.0.conv2" || l.name == "layer1.0.bn2" ||
                         l.name == "layer3.1.conv1" || l.name == "layer3.1.bn1";
    EXPECT_EQ(op.stats_epilogue || op.stats_given, !refused) << l.name;
  }
}

// kFuseConvPrologue: in a bottleneck, bn1 and bn2 each feed the next conv alone (32 in
// ResNet-50), in a basic block bn1 (8 in ResNet-18); the stem's feeds the max pool and a
// block's last its shortcut too. Only on top of conv_stats; a refusal of either side leaves
// both as they were.
TEST(Lowering, AConvAppliesTheBatchNormItAloneReads) {
  for (int depth : {18, 50}) {
    const Network net = resnet(depth);
    const std::string what = "resnet" + std::to_string(depth);
    const Lowering low = lower(net, kAllFusions);
    expect_well_formed(net, low, what);
    int prologues = 0, applied = 0;
    for (const Op& op : low.ops) {
      applied += op.apply_in_reader;
      if (op.apply_in_reader) {
        EXPECT_EQ(op.kind, OpKind::bn_relu) << what;
        EXPECT_TRUE(op.stats_given) << what;
      }
      if (!op.prologue) continue;
      ++prologues;
      EXPECT_EQ(op.kind, OpKind::conv) << what;
      const Op& bn = op_of(low, op.inputs[0] - 1);  // the ReLU writing the conv's input
      EXPECT_TRUE(bn.apply_in_reader) << what << ": " << first_layer(net, op).name;
      EXPECT_EQ(bn.output, op.inputs[0]) << what;
    }
    EXPECT_EQ(prologues, depth == 50 ? 32 : 8) << what;
    EXPECT_EQ(applied, prologues) << what;
    EXPECT_EQ(counts(low), counts(lower(net, kFuseBnRelu | kFuseBnAddRelu))) << what;
    for (const Op& op : lower(net, kAllFusions & ~uint32_t(kFuseConvStats)).ops)
      EXPECT_FALSE(op.prologue || op.apply_in_reader) << what;
  }
  const Network net = resnet(50);
  const Lowering low = lower(net, kAllFusions, [&](const Op& op) {
    return !(op.prologue && first_layer(net, op).name == "layer2.0.conv2") &&
           !(op.apply_in_reader && first_layer(net, op).name == "layer3.1.bn2");
  });
  for (const Op& op : low.ops) {
    const std::string& name = first_layer(net, op).name;
    if (name == "layer2.0.conv2" || name == "layer2.0.bn1" || name == "layer3.1.conv3" ||
        name == "layer3.1.bn2") {
      EXPECT_FALSE(op.prologue || op.apply_in_reader) << name;
      EXPECT_TRUE(op.stats_epilogue || op.stats_given) << name;  // conv_stats stays
    } else if (name == "layer2.0.conv3" || name == "layer2.0.bn2") {
      EXPECT_TRUE(op.prologue || op.apply_in_reader) << name;
    }
  }
}

TEST(Lowering, FusionWords) {
  EXPECT_EQ(parse_fusions("none"), 0u);
  EXPECT_EQ(parse_fusions("bn_relu,bn_add_relu"), kDefaultFusions);
  EXPECT_EQ(parse_fusions("conv_prologue,conv_stats,bn_relu,bn_add_relu"), kAllFusions);
  EXPECT_EQ(fusions_name(0), "none");
  EXPECT_EQ(fusions_name(kDefaultFusions), "bn_relu,bn_add_relu");
  EXPECT_EQ(fusions_name(kAllFusions), "bn_relu,bn_add_relu,conv_stats,conv_prologue");
  for (uint32_t bits = 0; bits <= kAllFusions; ++bits)
    EXPECT_EQ(parse_fusions(fusions_name(bits)), bits);
  for (const char* bad : {"", "bn_relu,", "relu", "bn_relu,none", "BN_RELU"})
    EXPECT_THROW(parse_fusions(bad), Error) << bad;
}

// conv (0 -> 1), bn (1 -> 2), then the layers given, over tensors 2 onwards.
Network small(std::vector<Layer> tail) {
  Network net;
  net.name = "small";
  net.tensors = {"input"};
  Layer conv;
  conv.kind = LayerKind::conv;
  conv.inputs = {0};
  Layer bn;
  bn.kind = LayerKind::batchnorm;
  bn.inputs = {1};
  std::vector<Layer> all = {conv, bn};
  all.insert(all.end(), tail.begin(), tail.end());
  for (size_t i = 0; i < all.size(); ++i) {
    all[i].output = int(i) + 1;
    all[i].name = "l";  // not "l" + to_string: GCC 12's false -Wrestrict
    all[i].name += std::to_string(i);
    net.tensors.push_back(all[i].name);
  }
  net.layers = all;
  return net;
}

Layer layer(LayerKind k, std::vector<int> inputs) {
  Layer l;
  l.kind = k;
  l.inputs = std::move(inputs);
  return l;
}

// A tensor that a layer outside the pattern reads stays an op's output.
TEST(Lowering, ATensorReadElsewhereIsNeverFused) {
  {  // the conv's output read by its batch norm and by an add: the conv writes no statistics
    const Network net = small({layer(LayerKind::add, {1, 2})});
    const Lowering low = lower(net, kAllFusions);
    expect_well_formed(net, low, "conv read twice");
    for (const Op& op : low.ops) EXPECT_FALSE(op.stats_epilogue || op.stats_given);
  }
  {  // the batch norm's output read by its ReLU and by an add
    const Network net = small({layer(LayerKind::relu, {2}), layer(LayerKind::add, {2, 3})});
    const Lowering low = lower(net, kAllFusions);
    expect_well_formed(net, low, "bn read twice");
    EXPECT_EQ(counts(low)[OpKind::batchnorm], 1);
    EXPECT_EQ(low.ops.size(), net.layers.size());
  }
  {  // the add's output read by its ReLU and by the next add
    const Network net = small({layer(LayerKind::add, {2, 1}), layer(LayerKind::relu, {3}),
                               layer(LayerKind::add, {4, 3})});
    const Lowering low = lower(net, kAllFusions);
    expect_well_formed(net, low, "add read twice");
    EXPECT_EQ(counts(low)[OpKind::bn_add_relu], 0);
  }
  {  // the batch norm is the add's shortcut (second input), not its branch
    const Network net = small({layer(LayerKind::add, {1, 2}), layer(LayerKind::relu, {3})});
    EXPECT_EQ(counts(lower(net, kAllFusions))[OpKind::bn_add_relu], 0);
  }
  {  // the add reads the batch norm twice
    const Network net = small({layer(LayerKind::add, {2, 2}), layer(LayerKind::relu, {3})});
    EXPECT_EQ(counts(lower(net, kAllFusions))[OpKind::bn_add_relu], 0);
  }
  {  // and the plain pattern, for contrast: fused
    const Network net = small({layer(LayerKind::add, {2, 1}), layer(LayerKind::relu, {3})});
    const Lowering low = lower(net, kAllFusions);
    expect_well_formed(net, low, "block");
    ASSERT_EQ(low.ops.size(), 2u);
    EXPECT_EQ(low.ops[1].kind, OpKind::bn_add_relu);
    EXPECT_EQ(low.ops[1].inputs, (std::vector<int>{1, 1}));
    EXPECT_EQ(low.ops[1].output, 4);
  }
}

}  // namespace
}  // namespace stoker
