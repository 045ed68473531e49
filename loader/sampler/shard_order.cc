// SPDX-License-Identifier: Apache-2.0
#include "loader/sampler/shard_order.h"

#include "common/error.h"
#include "common/rng.h"

namespace stoker {

namespace {
constexpr uint64_t kShardStream = 0x5348415244ULL;  // "SHARD": apart from shuffles and crops
}

std::vector<uint32_t> sequential_shard_order(std::span<const uint32_t> shard_of, size_t shards,
                                             uint64_t seed, uint64_t epoch, size_t buffer) {
  // Each shard's samples, in increasing index: a counting sort by shard.
  std::vector<size_t> first(shards + 1, 0);
  for (uint32_t s : shard_of) {
    STOKER_CHECK(s < shards);
    ++first[s + 1];
  }
  for (size_t s = 0; s < shards; ++s) first[s + 1] += first[s];
  std::vector<uint32_t> by_shard(shard_of.size());
  {
    std::vector<size_t> fill(first.begin(), first.end() - 1);
    for (size_t i = 0; i < shard_of.size(); ++i) by_shard[fill[shard_of[i]]++] = uint32_t(i);
  }
  std::vector<uint32_t> shard_order(shards);
  for (size_t s = 0; s < shards; ++s) shard_order[s] = static_cast<uint32_t>(s);
  Rng shard_rng(seed, epoch, 0, kShardStream);
  for (size_t i = shards; i > 1; --i)
    std::swap(shard_order[i - 1], shard_order[shard_rng.below(i)]);

  std::vector<uint32_t> out;
  out.reserve(shard_of.size());
  std::vector<uint32_t> buf;
  const size_t capacity = std::max<size_t>(buffer, 1);
  buf.reserve(capacity);
  Rng pick(seed, epoch, 1, kShardStream);
  for (uint32_t s : shard_order) {
    for (size_t k = first[s]; k < first[s + 1]; ++k) {
      if (buf.size() < capacity) {
        buf.push_back(by_shard[k]);
        continue;
      }
      uint32_t& slot = buf[pick.below(capacity)];
      out.push_back(slot);
      slot = by_shard[k];
    }
  }
  while (!buf.empty()) {
    const size_t k = pick.below(buf.size());
    out.push_back(buf[k]);
    buf[k] = buf.back();
    buf.pop_back();
  }
  return out;
}

}  // namespace stoker
