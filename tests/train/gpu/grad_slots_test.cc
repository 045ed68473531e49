// SPDX-License-Identifier: Apache-2.0
// The activation gradients' shared memory (grad_slots.h) on the networks the GPU backend
// plans: no two gradients live at once in one slot, each tensor's lifetime is the span from
// its last reader to its producer (a fused batch norm's input until its add), and the plan is
// far smaller than a buffer per gradient.
#include "train/gpu/grad_slots.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "models/resnet.h"
#include "models/shapes.h"

namespace stoker::gpu {
namespace {

struct Planned {
  std::vector<GradUse> uses;
  std::vector<int> use_of;
  GradSlots slots;
  int64_t unshared = 0;
};

// As CudnnNet::plan_tensors: in place where in_place_over says, the images and the logits
// without a slot. 2-byte elements (f16), batch 256.
Planned plan(const Network& net, int64_t side) {
  const std::vector<ActShape> shapes = infer_shapes(net, side, side);
  const size_t count = net.tensors.size();
  std::vector<int> readers(count, 0), root(count, -1);
  std::vector<int64_t> bytes(count, 0);
  for (const Layer& l : net.layers)
    for (int in : l.inputs) ++readers[size_t(in)];
  Planned p;
  for (size_t t = 1; t + 1 < count; ++t) {
    if (const int in = in_place_over(net, readers, t); in >= 0) {
      root[t] = root[size_t(in)];
      continue;
    }
    root[t] = int(t);
    bytes[t] = 256 * shapes[t].elements() * 2;
    p.unshared += bytes[t];
  }
  const std::vector<int> late = fused_late_writers(net);
  p.uses = grad_uses(net, root, bytes, late, &p.use_of);
  p.slots = plan_grad_slots(p.uses);
  return p;
}

Network resnet(int depth) {
  ResNetConfig c;
  c.depth = depth;
  c.num_classes = 1000;
  return build_resnet(c);
}

TEST(GradSlots, NoTwoLiveGradientsShareASlot) {
  for (int depth : {18, 50, 101}) {
    const Planned p = plan(resnet(depth), 224);
    ASSERT_EQ(p.slots.slot_of.size(), p.uses.size());
    for (size_t a = 0; a < p.uses.size(); ++a) {
      EXPECT_LE(p.uses[a].bytes, p.slots.slot_bytes[size_t(p.slots.slot_of[a])]);
      for (size_t b = a + 1; b < p.uses.size(); ++b) {
        if (p.slots.slot_of[a] != p.slots.slot_of[b]) continue;
        const bool overlap = p.uses[a].lo <= p.uses[b].hi && p.uses[b].lo <= p.uses[a].hi;
        EXPECT_FALSE(overlap) << "resnet" << depth << ": uses " << a << " [" << p.uses[a].lo << ", "
                              << p.uses[a].hi << "] and " << b << " [" << p.uses[b].lo << ", "
                              << p.uses[b].hi << "] share slot " << p.slots.slot_of[a];
      }
    }
    // A handful of buffers per stage hold what was one per tensor (batch 256, 224 px, f16):
    // ResNet-18 2.65 GB -> 0.98 GB, the deeper ones by more.
    EXPECT_LT(p.slots.total(), (depth == 18 ? p.unshared / 2 : p.unshared / 4))
        << "resnet" << depth << ": " << p.slots.total() << " of " << p.unshared;
    std::printf("resnet%d: activation gradients %.2f GB shared, %.2f GB one buffer each\n", depth,
                1e-9 * double(p.slots.total()), 1e-9 * double(p.unshared));
  }
}

TEST(GradSlots, LifetimesRunFromTheLastReaderToTheProducer) {
  const Network net = resnet(50);
  const Planned p = plan(net, 224);
  for (size_t t = 1; t + 1 < net.tensors.size(); ++t) {
    const int u = p.use_of[t];
    ASSERT_GE(u, 0) << net.tensors[t];
    EXPECT_LE(p.uses[size_t(u)].lo, int(t) - 1) << net.tensors[t] << ": its producer reads it";
    for (size_t i = 0; i < net.layers.size(); ++i)
      for (int in : net.layers[i].inputs) {
        if (in == int(t)) {
          EXPECT_GE(p.uses[size_t(u)].hi, int(i)) << net.tensors[t];
        }
      }
  }
  // layer1.0.conv3's output feeds bn3, whose fused backward runs at layer1.0.add.
  const auto layer = [&](const std::string& name) {
    const auto it = std::find_if(net.layers.begin(), net.layers.end(),
                                 [&](const Layer& l) { return l.name == name; });
    return int(it - net.layers.begin());
  };
  const int conv3 = layer("layer1.0.conv3");
  EXPECT_GE(p.uses[size_t(p.use_of[size_t(conv3) + 1])].hi, layer("layer1.0.add"));
}

TEST(GradSlots, OverlappingUsesGetSlotsOfTheirOwn) {
  const std::vector<GradUse> uses = {{100, 0, 5}, {50, 3, 8}, {80, 6, 9}, {10, 9, 9}};
  const GradSlots s = plan_grad_slots(uses);
  EXPECT_NE(s.slot_of[0], s.slot_of[1]);
  EXPECT_EQ(s.slot_of[0], s.slot_of[2]);  // [0, 5] and [6, 9] take turns
  EXPECT_NE(s.slot_of[2], s.slot_of[3]);  // both live at layer 9
  EXPECT_EQ(s.slot_of[1], s.slot_of[3]);  // [3, 8] and [9, 9]
  EXPECT_EQ(s.total(), 100 + 50);
}

}  // namespace
}  // namespace stoker::gpu
