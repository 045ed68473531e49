// SPDX-License-Identifier: Apache-2.0
// The order of an epoch for sequential shard reading, as WebDataset makes it: the shards
// in a seeded random order, each streamed front to back, the stream passed through a
// shuffle buffer of bounded size. A pure function of (seed, epoch, shard list, buffer
// size); reading in this order touches each shard in one forward sweep, never further than
// `buffer` samples behind the stream. Not a reader: the sampler uses it for the order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace stoker {

// `shard_of[i]`: the shard holding dataset sample i (< `shards`). A shard's samples are
// streamed in increasing i, which `stoker pack` makes their order in the file. The buffer
// holds `buffer` samples (0 or 1: the stream itself); once it is full, each new sample
// takes the place of one drawn from it, which is output; at the end the rest drains in
// random order. So a sample at stream position p is output at position >= p - buffer + 1.
std::vector<uint32_t> sequential_shard_order(std::span<const uint32_t> shard_of, size_t shards,
                                             uint64_t seed, uint64_t epoch, size_t buffer);

}  // namespace stoker
