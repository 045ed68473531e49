// SPDX-License-Identifier: Apache-2.0
// The sequential shard order: a permutation every epoch, shards swept one at a time and
// front to back (through the buffer), displacement bounded by the buffer, a pure function
// of (seed, epoch, shards, buffer).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "loader/sampler/shard_order.h"

namespace stoker {
namespace {

// 10 shards of uneven size (7..16 samples), contiguous in index order as pack writes them.
std::vector<uint32_t> uneven_shards(size_t& shards) {
  std::vector<uint32_t> shard_of;
  shards = 10;
  for (uint32_t s = 0; s < shards; ++s) {
    for (uint32_t k = 0; k < 7 + (s * 5) % 10; ++k) shard_of.push_back(s);
  }
  return shard_of;
}

// Stream position of every sample: the order with no buffer.
std::vector<size_t> stream_positions(const std::vector<uint32_t>& stream) {
  std::vector<size_t> pos(stream.size());
  for (size_t p = 0; p < stream.size(); ++p) pos[stream[p]] = p;
  return pos;
}

TEST(ShardOrder, PermutationEveryEpochAndBufferSize) {
  size_t shards = 0;
  const auto shard_of = uneven_shards(shards);
  for (size_t buffer : {0, 1, 2, 8, 50, 1000}) {
    for (uint64_t epoch = 0; epoch < 4; ++epoch) {
      auto o = sequential_shard_order(shard_of, shards, 7, epoch, buffer);
      ASSERT_EQ(o.size(), shard_of.size());
      std::sort(o.begin(), o.end());
      for (size_t i = 0; i < o.size(); ++i) ASSERT_EQ(o[i], i) << "buffer " << buffer;
    }
  }
}

TEST(ShardOrder, NoBufferSweepsShardsWholeInShuffledOrder) {
  size_t shards = 0;
  const auto shard_of = uneven_shards(shards);
  const auto o = sequential_shard_order(shard_of, shards, 7, 0, 1);
  std::vector<uint32_t> visited;
  for (size_t p = 0; p < o.size(); ++p) {
    if (p == 0 || shard_of[o[p]] != shard_of[o[p - 1]]) {
      visited.push_back(shard_of[o[p]]);
    } else {
      EXPECT_EQ(o[p], o[p - 1] + 1) << "a shard is read front to back";
    }
  }
  ASSERT_EQ(visited.size(), shards) << "each shard in one sweep";
  EXPECT_FALSE(std::is_sorted(visited.begin(), visited.end())) << "shard order not shuffled";
  const auto other = sequential_shard_order(shard_of, shards, 7, 1, 1);
  EXPECT_NE(o, other) << "the shard order changes with the epoch";
}

TEST(ShardOrder, DisplacementBoundedByTheBuffer) {
  size_t shards = 0;
  const auto shard_of = uneven_shards(shards);
  for (size_t buffer : {2, 5, 16, 40}) {
    const auto stream = stream_positions(sequential_shard_order(shard_of, shards, 3, 2, 1));
    const auto o = sequential_shard_order(shard_of, shards, 3, 2, buffer);
    size_t max_ahead = 0, moved = 0;
    for (size_t q = 0; q < o.size(); ++q) {
      const size_t p = stream[o[q]];
      // Never output before it could have been read, and never more than buffer-1 early.
      ASSERT_LE(p, q + buffer - 1) << "buffer " << buffer << " position " << q;
      max_ahead = std::max(max_ahead, p > q ? p - q : 0);
      moved += p != q;
    }
    EXPECT_EQ(max_ahead, buffer - 1) << "the bound is reached: the buffer really shuffles";
    EXPECT_GT(moved, o.size() / 2);
  }
}

TEST(ShardOrder, PureFunctionOfSeedEpochShardsAndBuffer) {
  size_t shards = 0;
  const auto shard_of = uneven_shards(shards);
  const auto a = sequential_shard_order(shard_of, shards, 11, 3, 16);
  // Recomputing it (as a resumed run does, from (seed, epoch)) gives the same order.
  EXPECT_EQ(a, sequential_shard_order(shard_of, shards, 11, 3, 16));
  EXPECT_NE(a, sequential_shard_order(shard_of, shards, 12, 3, 16));
  EXPECT_NE(a, sequential_shard_order(shard_of, shards, 11, 4, 16));
  EXPECT_NE(a, sequential_shard_order(shard_of, shards, 11, 3, 17));
  // Fixed values: the order must not drift between builds or standard libraries.
  const auto small = sequential_shard_order(std::vector<uint32_t>{0, 0, 1, 1, 2, 2}, 3, 1, 0, 2);
  EXPECT_EQ(small, (std::vector<uint32_t>{5, 4, 3, 0, 1, 2}));
}

TEST(ShardOrder, NonContiguousShardsStreamInIndexOrder) {
  // A shard index may interleave shards; each shard's samples still stream by index.
  const std::vector<uint32_t> shard_of{1, 0, 1, 0, 1, 0};
  const auto o = sequential_shard_order(shard_of, 2, 5, 0, 1);
  std::map<uint32_t, std::vector<uint32_t>> per;
  for (uint32_t i : o) per[shard_of[i]].push_back(i);
  EXPECT_EQ(per[0], (std::vector<uint32_t>{1, 3, 5}));
  EXPECT_EQ(per[1], (std::vector<uint32_t>{0, 2, 4}));
}

}  // namespace
}  // namespace stoker
