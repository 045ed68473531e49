// SPDX-License-Identifier: Apache-2.0
// Per-image tensor shapes of a network for one input size (the batch N is chosen at run
// time and multiplies every shape). Shapes only: no values, no FLOPs (models/flops.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/network.h"

namespace stoker {

// C x H x W of one image's tensor; a flattened vector (fc's output) is C x 1 x 1.
struct ActShape {
  int64_t c = 0;
  int64_t h = 0;
  int64_t w = 0;
  int64_t elements() const { return c * h * w; }
};
std::string to_string(const ActShape& s);  // "64x112x112"

// The largest side accepted: keeps every element and multiply-add count within int64.
inline constexpr int64_t kMaxInputSide = 1 << 20;

// Shape of every tensor (indexed like Network::tensors) for a height x width input, by
// torch's rules (floor division, no ceil_mode). Throws stoker::Error, naming the size, the
// layer and why, when a layer's padded input is smaller than its kernel (or a side is < 1 or
// above kMaxInputSide). ResNet itself accepts any side >= 1: every window then overlaps the
// image.
std::vector<ActShape> infer_shapes(const Network& net, int64_t height, int64_t width);

}  // namespace stoker
