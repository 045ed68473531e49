// SPDX-License-Identifier: Apache-2.0
#include "loader/sampler/sampler.h"

#include "common/error.h"
#include "common/rng.h"
#include "loader/sampler/shard_order.h"

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
      usage_fail("--shard-order sequential needs a packed shard dataset (`stoker pack` makes one)");
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
  // Rank r's slice of every full global batch, then its piece of the short last one.
  const size_t b = config_.batch_size, big = global_batch(), full = dataset_size_ / big;
  const size_t tail = dataset_size_ - full * big, w = config_.world, r = config_.rank;
  const size_t tail_begin = full * big + tail * r / w;
  const size_t tail_end = config_.drop_last ? tail_begin : full * big + tail * (r + 1) / w;
  order_.clear();
  order_.reserve(full * b + (tail_end - tail_begin));
  for (size_t k = 0; k < full; ++k) {
    const size_t begin = k * big + r * b;
    order_.insert(order_.end(), all.begin() + ptrdiff_t(begin), all.begin() + ptrdiff_t(begin + b));
  }
  order_.insert(order_.end(), all.begin() + ptrdiff_t(tail_begin),
                all.begin() + ptrdiff_t(tail_end));
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

uint64_t Sampler::position_after(size_t batches_done) const {
  STOKER_CHECK(batches_done <= batches());
  return std::min<uint64_t>(uint64_t(batches_done) * global_batch(), dataset_size_);
}

size_t Sampler::batch_of(uint64_t index) const {
  // The end of the epoch is where a run that consumed its short last batch stands.
  const uint64_t end = position_after(batches());
  if (index == end || index == dataset_size_) return batches();
  if (index > dataset_size_) {
    fail("resume position {} is past the end of epoch {} ({} samples; did the dataset change?)",
         index, epoch_, dataset_size_);
  }
  if (index % global_batch() != 0) {
    if (config_.world == 1)
      fail("resume position {} is not a batch boundary (batch size {})", index, config_.batch_size);
    fail(
        "resume position {} is not a boundary of the global batch {} ({} ranks x batch {}): "
        "resume with a world size and batch whose product divides it",
        index, global_batch(), config_.world, config_.batch_size);
  }
  return std::min<size_t>(index / global_batch(), batches());
}

}  // namespace stoker
