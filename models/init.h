// SPDX-License-Identifier: Apache-2.0
// Initial values of a network's parameters and buffers, from each Param's Init and a seed:
// a pure function of (seed, parameter index), so parameters can be filled in any order or in
// parallel, and a parameter's values do not depend on the others' shapes (the class count).
// Same distributions as torchvision, not the same random stream.
#pragma once

#include <cstdint>
#include <span>

#include "models/network.h"

namespace stoker {

// Fills net.params[index] (dtype f32) into `out`, which holds exactly numel() floats.
void init_param(const Network& net, size_t index, uint64_t seed, std::span<float> out);

// The i64 buffers (num_batches_tracked): they start at 0.
void init_param(const Network& net, size_t index, uint64_t seed, std::span<int64_t> out);

}  // namespace stoker
