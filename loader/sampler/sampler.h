// SPDX-License-Identifier: Apache-2.0
// The order of an epoch: sequential or a seeded shuffle (a pure function of seed and epoch),
// cut into batches (short last batch or drop_last). For packed shards the shuffle may
// instead be sequential (loader/sampler/shard_order.h).
//
// Sharded by rank for data parallelism, without changing the order: the global order of an
// epoch does not depend on the world size. With `world` ranks of `batch_size` each, global
// step k takes global positions [kB, (k+1)B), B = world x batch_size, and rank r the slice
// [kB + r b, kB + (r+1) b). Every sample is visited exactly once per epoch, by one rank; no
// padding. A short last global batch (fewer than B left) is dropped under drop_last (what the
// trainer asks for, so every rank takes the same number of steps), else split into `world`
// contiguous pieces that differ by at most one sample (some may be empty). Positions
// (Position, batch_of) are global, so a run resumes on another world size where it stopped.
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
  // Samples one step takes across the world: world x batch_size.
  size_t global_batch() const { return size_t(config_.world) * config_.batch_size; }
  // The global position (samples of the epoch consumed by all ranks together) once this
  // rank's first `batches_done` batches are done: where a run stands, and resumes.
  uint64_t position_after(size_t batches_done) const;
  size_t batches() const;
  size_t batch_begin(size_t b) const { return b * config_.batch_size; }
  size_t batch_length(size_t b) const;
  // Dataset index of this rank's `pos`-th sample of the current epoch.
  uint32_t at(size_t pos) const { return order_[pos]; }
  // The batch that starts at global position `index`; `index` must be a boundary of the
  // global batch or the end of the epoch (batches(): nothing left). stoker::Error otherwise:
  // a run saved with another global batch cannot resume mid-batch.
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
