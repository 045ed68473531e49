// SPDX-License-Identifier: Apache-2.0
// Which activation gradients may share memory (host only, unit-tested without a device). In
// the backward an activation's gradient lives from the backward of its last reader (which
// writes it first) to the backward of its producer (which reads it last); in a ResNet that is
// a few layers, so a handful of buffers per stage can hold every gradient in turn, as torch's
// caching allocator reuses them. Interval colouring over the layers, planned once per shape.
// Not for the activations themselves: those live from the forward to the backward.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/network.h"

namespace stoker::gpu {

// The tensor that tensor t is computed in place over, or -1: a ReLU or residual add whose
// (first) input only it reads (readers[i]: how many layers read tensor i), never the images.
// A ReLU's forward and backward (dx = y > 0 ? dy : 0 reads only its own output) need nothing
// else of that input, and an add's backward passes dy on unchanged; so a block's last BN, its
// add and the ReLU after it share one buffer (and one gradient), which is also what cuDNN's
// fused BN + add + ReLU writes.
int in_place_over(const Network& net, std::span<const int> readers, size_t t);

// Per tensor, a layer after its last reader whose backward writes its gradient too, or -1: a
// batch norm that an add reads as its branch may run its backward at the add (BN + add + ReLU
// fused, which planning may still turn off), so its input's gradient counts as live until there.
std::vector<int> fused_late_writers(const Network& net);

// One gradient buffer to place: `bytes`, live during the backward of layers lo..hi inclusive
// (the backward runs hi before lo). Tensors computed in place over another share its buffer:
// they are one use, over the union of their intervals.
struct GradUse {
  int64_t bytes = 0;
  int lo = 0, hi = 0;
};

struct GradSlots {
  std::vector<int> slot_of;         // per use: its slot
  std::vector<int64_t> slot_bytes;  // per slot: the largest use it holds
  int64_t total() const;
};

// Uses whose intervals overlap never share a slot; larger uses are placed first, each in the
// first slot free over its interval, so a slot is sized by its first use.
GradSlots plan_grad_slots(std::span<const GradUse> uses);

// The uses of `net`'s activation gradients: root[t] is the tensor whose memory tensor t uses
// (t itself when it owns it; -1 for a tensor without a gradient buffer: the images, and the
// logits, which the loss writes in f32), bytes[t] its gradient's size (for roots), late[t] a
// layer after t's last reader whose backward writes t's gradient too (-1: none; a fused
// BN + add + ReLU runs its batch norm's backward at the add). Returns one use per root, and in
// use_of[t] the use of each tensor (-1 where none).
std::vector<GradUse> grad_uses(const Network& net, std::span<const int> root,
                               std::span<const int64_t> bytes, std::span<const int> late,
                               std::vector<int>* use_of);

}  // namespace stoker::gpu
