// SPDX-License-Identifier: Apache-2.0
// One sample from its source to its place in the batch: read -> decode -> crop/resize ->
// collate, with a timestamp after each stage; and the one on-error policy every reader
// applies (SlotChain). Readers differ in who runs these, never in what they do.
#pragma once

#include <opencv2/core.hpp>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "augment/collate.h"
#include "augment/decoder.h"
#include "augment/resize_collate.h"
#include "loader/bad_samples.h"
#include "loader/batch.h"
#include "loader/index/index.h"
#include "loader/loader_config.h"
#include "loader/sampler/sampler.h"
#include "loader/sources/source.h"

namespace stoker {

// What shapes one sample besides its file. A LoaderContext holds one; so does a worker
// process, which has no LoaderContext (its index is a shared mapping, not an Index).
struct SampleRecipe {
  TransformConfig transform;
  uint64_t seed = 0;
  bool no_decode = false;
  bool gpu_decode = false;  // LoaderConfig::decode_device == gpu
};

// What every loader thread shares, read-only during an epoch (BadSamples is thread-safe).
struct LoaderContext {
  // `source`: the prototype each loader thread clones; null: made from config.source, with the
  // reads in flight its reader asks for.
  LoaderContext(const Index& index, const LoaderConfig& config,
                std::unique_ptr<Source> source = nullptr);
  const Index& index;
  LoaderConfig config;
  Sampler sampler;
  Normalizer normalizer;
  SampleRecipe recipe;
  BadSamples bad;
  std::unique_ptr<Source> source;  // never read from: cloned into each thread's SampleScratch
  // The policy that runs: config.reader, or what it fell back to (uring without io_uring).
  ReaderSpec reader;
};

// --decode gpu's rules on a loader configuration: a reader in this process, no colour
// operations (CPU only), and the antialiased filter for the samples the CPU decodes (the
// GPU's). stoker::Error naming what to change.
void check_gpu_decode(LoaderConfig& config);

// Per-thread (or per-process) state: its own source instance, and scratch sized by the largest
// image seen.
struct SampleScratch {
  SampleScratch(const DecodeOptions& options, std::unique_ptr<Source> src)
      : source(std::move(src)), decoder(options) {}
  std::unique_ptr<Source> source;
  std::string location;  // the file name locate_sample() wrote
  std::string name;      // the sample's name in messages (file, or shard:member)
  ReadBuffer file;
  Decoder decoder;
  cv::Mat resized;             // the two-step path's resized image (colour ops, area resize)
  ResizeCollateScratch fused;  // the one-pass resize + collate's tables and rows
};

// The output side (square) of batch `b` of the sampler's current epoch under an active
// config.size_schedule: the schedule at (epoch, epoch x batches per epoch + b).
int scheduled_side(const LoaderContext& ctx, size_t b);
// The recipe for a batch of `spec`'s width and height: the transform's output size set to
// them (a centre crop's short side scaled as --size sets it, 256/224 of the larger side).
SampleRecipe recipe_for(const SampleRecipe& recipe, const OutputSpec& spec);

// Sets the batch's size, output shape and identity for batch `b` of the sampler's current
// epoch.
void begin_batch(const LoaderContext& ctx, Batch& batch, size_t b);
void finish_batch(Batch& batch);

// The bytes of a slot's first candidate when the reader has already fetched them
// (uring:QD:T), or the reason that read failed; later candidates are read with read().
struct PreRead {
  std::span<const uint8_t> bytes;
  int64_t read_ns = 0;
  std::string_view error;  // non-empty: the read failed, for this reason (naming the file)
};

// One attempt at dataset sample `idx` at `where` (named w.name in messages), the
// `attempt`-th candidate for its slot, which keys its random crop with the seed and epoch:
// read (or take pre_read), decode, augment and collate into `dst` (recipe.transform's output
// size; the normaliser's dtype and layout). Returns the hash of what
// it wrote (of the file's bytes with no_decode) and adds to `t`. Throws stoker::Error naming
// the file. No policy here. Every reader, worker processes included, runs exactly this.
//
// With recipe.gpu_decode, `encoded` (the slot's) receives the crop and, where the GPU decoder
// takes the file, its bytes' place in `arena`: nothing is decoded, and the hash is of the
// bytes and the crop. Otherwise the CPU decodes into `dst` as above and `encoded` says why.
struct EncodedSlot {
  EncodedSample* sample = nullptr;
  EncodedArena* arena = nullptr;
};
uint64_t attempt_sample(const SampleRecipe& recipe, const Normalizer& normalizer, SampleScratch& w,
                        const SampleLocation& where, uint64_t epoch, uint32_t idx, uint32_t attempt,
                        void* dst, const PreRead* pre_read, SampleTiming& t,
                        const EncodedSlot& encoded = {});

// The on-error policy, the same for every reader and source. Slot `pos` of an epoch tries
// candidates sampler.at((pos + k) % epoch_size) for k = 0, 1, ... max_replacements and
// takes the first that loads, with attempt number k (its crop). Whether candidate k loads
// depends only on (file, seed, epoch, its index, k): no reader consults what other slots or
// threads found ("known bad" files are tried again), so which samples fill which slots, the
// bad-file list, the replacement count and the epoch checksum are a function of the seed,
// the epoch and the files alone, whatever the reader, source, thread count or timing.
class SlotChain {
 public:
  void begin(const LoaderContext& ctx, size_t batch, size_t slot);
  uint32_t index() const { return idx_; }
  uint32_t attempt() const { return static_cast<uint32_t>(k_); }
  SampleTiming& timing() { return t_; }
  // The current candidate failed with `reason` (naming the file). Under fail: throws it as
  // a stoker::Error. Under skip: lists the file and moves to the next candidate; throws when
  // max_replacements + 1 candidates in a row failed.
  void failed(LoaderContext& ctx, const std::string& reason);
  // The current candidate loaded, its tensor hash `hash`: the slot's label, index, hash and
  // timing go into the batch, and its replacements into the count.
  void filled(LoaderContext& ctx, Batch& batch, size_t slot, uint64_t hash);

 private:
  size_t pos_ = 0, k_ = 0;
  uint32_t idx_ = 0;
  SampleTiming t_;
};

// Fills sample `slot` of `batch` through the chain above, reading with w.source. Throws
// stoker::Error under --on-error fail, or when the chain ran out under skip.
void load_sample(LoaderContext& ctx, SampleScratch& w, Batch& batch, size_t slot,
                 const PreRead* pre_read = nullptr);

}  // namespace stoker
