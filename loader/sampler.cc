// SPDX-License-Identifier: Apache-2.0
#include "loader/sampler.h"

#include "common/error.h"
#include "common/rng.h"
#include "loader/shard_order.h"

namespace stoker {

namespace {
constexpr uint64_t kShuffleStream = 0x5348554646ULL;  // "SHUFF": keeps shuffles apart from crops
}

SamplerConfig::ShardOrder parse_shard_order(const std::string& text) {
  if (text == "global") return SamplerConfig::ShardOrder::global;
  if (text == "sequential") return SamplerConfig::ShardOrder::sequential;
  fail("unknown shard order '{}': expected global or sequential", text);
}

Sampler::Sampler(size_t dataset_size, SamplerConfig config, std::span<const uint32_t> shard_of,
                 size_t shards)
    : dataset_size_(dataset_size), config_(config), shard_of_(shard_of), shards_(shards) {
  if (dataset_size == 0) fail("the dataset is empty: nothing to sample");
  if (config.batch_size == 0) fail("batch size must be at least 1");
  if (config.world == 0 || config.rank >= config.world) {
    fail("rank {} is outside a world of {} processes", config.rank, config.world);
  }
  if (dataset_size > UINT32_MAX) fail("datasets over 4 G samples are not supported");
  if (config.shard_order == SamplerConfig::ShardOrder::sequential) {
    if (shard_of.empty()) {
      fail("--shard-order sequential needs a packed shard dataset (`stoker pack` makes one)");
    }
    STOKER_CHECK(shard_of.size() == dataset_size && shards > 0);
  }
  set_epoch(0);
}

void Sampler::set_epoch(uint64_t epoch) {
  epoch_ = epoch;
  std::vector<uint32_t> all;
  if (config_.shuffle && config_.shard_order == SamplerConfig::ShardOrder::sequential) {
    all = sequential_shard_order(shard_of_, shards_, config_.seed, epoch, config_.shuffle_buffer);
  } else {
    all.resize(dataset_size_);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint32_t>(i);
  }
  if (config_.shuffle && config_.shard_order == SamplerConfig::ShardOrder::global) {
    Rng rng(config_.seed, epoch, 0, kShuffleStream);
    for (size_t i = all.size() - 1; i > 0; --i) std::swap(all[i], all[rng.below(i + 1)]);
  }
  if (config_.world == 1) {
    order_.swap(all);
    return;
  }
  const size_t per_rank = (dataset_size_ + config_.world - 1) / config_.world;
  order_.resize(per_rank);
  for (size_t i = 0; i < per_rank; ++i) {
    order_[i] = all[(i * config_.world + config_.rank) % dataset_size_];
  }
}

size_t Sampler::batches() const {
  const size_t b = config_.batch_size;
  return config_.drop_last ? order_.size() / b : (order_.size() + b - 1) / b;
}

size_t Sampler::batch_length(size_t b) const {
  const size_t begin = batch_begin(b);
  STOKER_CHECK(begin < order_.size());
  return std::min(config_.batch_size, order_.size() - begin);
}

size_t Sampler::batch_of(uint64_t index) const {
  // The end of the epoch is where a run that consumed its short last batch stands.
  if (index == order_.size()) return batches();
  if (index > order_.size()) {
    fail("resume position {} is past the end of epoch {} ({} samples; did the dataset change?)",
         index, epoch_, order_.size());
  }
  if (index % config_.batch_size != 0) {
    fail("resume position {} is not a batch boundary (batch size {})", index, config_.batch_size);
  }
  return index / config_.batch_size;
}

}  // namespace stoker
