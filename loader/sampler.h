// SPDX-License-Identifier: Apache-2.0
// The order of an epoch: sequential or a seeded shuffle (a pure function of seed and epoch),
// optionally sharded by rank like torch's DistributedSampler (padded by wrapping around so
// every rank gets the same count), cut into batches (short last batch or drop_last). For
// packed shards the shuffle may instead be sequential (loader/shard_order.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace stoker {

struct SamplerConfig {
  size_t batch_size = 64;
  bool shuffle = true;
  bool drop_last = false;
  uint64_t seed = 0;
  uint32_t rank = 0, world = 1;
  // Packed shards only. global: every sample read by offset in the shuffled order, the same
  // order as the file tree's. sequential: shards shuffled, each streamed through a shuffle
  // buffer of `shuffle_buffer` samples (WebDataset's order, for storage where only large
  // reads are fast).
  enum class ShardOrder { global, sequential } shard_order = ShardOrder::global;
  size_t shuffle_buffer = 1000;
};

// "global" or "sequential"; anything else is a stoker::Error.
SamplerConfig::ShardOrder parse_shard_order(const std::string& text);

// Where a run stands: `index` samples of `epoch` have been consumed (a batch boundary).
struct Position {
  uint64_t epoch = 0;
  uint64_t index = 0;
};

class Sampler {
 public:
  // `shard_of` (sample -> shard, `shards` of them): a packed dataset's layout, needed by the
  // sequential shard order and kept as a view (it must outlive the sampler).
  Sampler(size_t dataset_size, SamplerConfig config, std::span<const uint32_t> shard_of = {},
          size_t shards = 0);

  // Computes the order of `epoch`. Cheap enough to call at every epoch start.
  void set_epoch(uint64_t epoch);
  uint64_t epoch() const { return epoch_; }

  size_t dataset_size() const { return dataset_size_; }
  // Samples this rank visits in one epoch (including those dropped by drop_last).
  size_t epoch_size() const { return order_.size(); }
  size_t batches() const;
  size_t batch_begin(size_t b) const { return b * config_.batch_size; }
  size_t batch_length(size_t b) const;
  // Dataset index of this rank's `pos`-th sample of the current epoch.
  uint32_t at(size_t pos) const { return order_[pos]; }
  // The batch that starts at `index` samples into an epoch; `index` must be a batch boundary
  // or the end of the epoch (batches(): nothing left).
  size_t batch_of(uint64_t index) const;
  const SamplerConfig& config() const { return config_; }

 private:
  size_t dataset_size_;
  SamplerConfig config_;
  std::span<const uint32_t> shard_of_;
  size_t shards_ = 0;
  uint64_t epoch_ = 0;
  std::vector<uint32_t> order_;
};

}  // namespace stoker
