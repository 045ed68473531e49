// SPDX-License-Identifier: Apache-2.0
// One sample from storage to its place in the batch: read -> decode -> crop/resize ->
// collate, with a timestamp after each stage. The on-error policy lives here: under `skip`
// a failed sample is replaced by the next one in the epoch's order, so batches stay full
// and the result does not depend on which worker ran what.
#pragma once

#include <opencv2/core.hpp>

#include <span>
#include <string>
#include <vector>

#include "augment/collate.h"
#include "augment/decoder.h"
#include "loader/bad_samples.h"
#include "loader/batch.h"
#include "loader/index.h"
#include "loader/loader_config.h"
#include "loader/sampler.h"

namespace stoker {

// What shapes one sample besides its file. A LoaderContext holds one; so does a worker
// process, which has no LoaderContext (its index is a shared mapping, not an Index).
struct SampleRecipe {
  TransformConfig transform;
  uint64_t seed = 0;
  bool no_decode = false;
  bool evict_after_read = false;
};

// What every worker shares, read-only during an epoch (BadSamples is thread-safe).
struct LoaderContext {
  LoaderContext(const Index& index, const LoaderConfig& config);
  const Index& index;
  LoaderConfig config;
  Sampler sampler;
  Normalizer normalizer;
  SampleRecipe recipe;
  BadSamples bad;
};

// Per-worker scratch, sized by the largest image seen and then reused.
struct Worker {
  explicit Worker(const DecodeOptions& options) : decoder(options) {}
  std::string path;
  std::vector<uint8_t> file;
  Decoder decoder;
  cv::Mat resized;
};

// Sets the batch's size and identity for batch `b` of the sampler's current epoch.
void begin_batch(const LoaderContext& ctx, Batch& batch, size_t b);
// The bytes of a slot's own sample when the reader has already fetched them (uring), and
// how long that took; replacements of a bad sample are always read with pread.
struct PreRead {
  std::span<const uint8_t> bytes;
  int64_t read_ns = 0;
};

// One attempt at dataset sample `idx`, whose file is at `worker.path` (the `attempt`-th
// candidate for its slot, which keys its random crop with the seed and epoch): read (or
// take pre_read), decode, augment and collate into `dst`. Returns the hash of what it wrote
// (of the file's bytes with no_decode) and adds to `t`. Throws stoker::Error naming the
// file. No policy here: the caller decides what a failure means (load_sample below, or a
// process-pool parent). Every reader, worker processes included, runs exactly this.
uint64_t attempt_sample(const SampleRecipe& recipe, const Normalizer& normalizer, Worker& worker,
                        uint64_t epoch, uint32_t idx, uint32_t attempt, void* dst,
                        const PreRead* pre_read, SampleTiming& t);

// attempt_sample with the path taken from the context's index.
uint64_t try_sample(const LoaderContext& ctx, Worker& worker, uint64_t epoch, uint32_t idx,
                    uint32_t attempt, void* dst, const PreRead* pre_read, SampleTiming& t);

// Fills sample `slot` of batch `b`. Throws stoker::Error under --on-error fail, or when
// max_replacements samples in a row failed under skip.
void load_sample(LoaderContext& ctx, Worker& worker, Batch& batch, size_t b, size_t slot,
                 const PreRead* pre_read = nullptr);
void finish_batch(Batch& batch);

}  // namespace stoker
