// SPDX-License-Identifier: Apache-2.0
// Arithmetic cost of a network per image, for one input size: the forward multiply-adds
// (MACs) and the "trained image" FLOPs the benchmarks quote. Counts, not timings; the exact
// definition is here and in models/README.md.
#pragma once

#include <cstdint>
#include <vector>

#include "models/network.h"
#include "models/shapes.h"

namespace stoker {

// Multiply-adds of one layer for one image. conv: Ho * Wo * Cout * (Cin / groups) * k * k;
// fc: in * out. Every other kind (batchnorm, relu, pools, add) and every bias add: 0, as in
// the usual "4.09 G" figure for ResNet-50 at 224; they are about 1% of the conv work.
int64_t layer_macs(const Layer& l, const std::vector<ActShape>& shapes);

struct ForwardCost {
  int64_t macs = 0;         // conv + fc multiply-adds per image, forward only
  int64_t activations = 0;  // elements of all tensors the layers write, per image
};
ForwardCost forward_cost(const Network& net, const std::vector<ActShape>& shapes);

// One trained image = forward + backward, and the backward of a conv or fc layer is two
// products as large as its forward (gradient of the input, gradient of the weight): 3 x the
// forward MACs, x 2 FLOPs per MAC. By convention the first conv's input gradient, which a
// trainer never needs, is counted too (about 2.9% of ResNet-50's total at 224).
inline constexpr int kTrainPasses = 3;
inline double trained_image_flops(const ForwardCost& c) {
  return 2.0 * kTrainPasses * static_cast<double>(c.macs);
}

}  // namespace stoker
