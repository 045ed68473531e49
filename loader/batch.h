// SPDX-License-Identifier: Apache-2.0
// A batch: one contiguous tensor plus labels, sample indices and per-stage timings, from a
// pool allocated once. The pool's size (prefetch depth + 1 batches) is the loader's whole
// pixel memory, whatever the dataset size.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "augment/collate.h"
#include "augment/gpu/encoded_sample.h"
#include "loader/host_memory.h"

namespace stoker {

struct SampleTiming {
  int64_t read_ns = 0, decode_ns = 0, augment_ns = 0, collate_ns = 0;
  int64_t start_ns = 0;   // steady clock when the last attempt started (for traces)
  int32_t thread = 0;     // the loader thread that ran it: its OS thread id (processes:N: the pid)
  uint64_t bytes = 0;     // bytes read from storage for this sample (replacements included)
  uint32_t attempts = 1;  // 1, or more when failed samples were replaced by later ones
};

// --decode gpu: the files' bytes of one batch, for the GPU decoder, in memory from the
// loader's allocator (pinned for a GPU run); samples reserve their place concurrently. Its
// capacity is the configuration's (--decode-arena), never the data's: a sample that does not
// fit is decoded by the CPU instead (DecodedOn::arena_full).
struct EncodedArena {
  EncodedArena(size_t bytes, const HostMemory& memory);
  ~EncodedArena();
  EncodedArena(const EncodedArena&) = delete;
  EncodedArena& operator=(const EncodedArena&) = delete;
  // Where `n` bytes go, or null when they do not fit.
  uint8_t* reserve(size_t n, uint64_t& offset);
  uint8_t* data = nullptr;
  size_t capacity = 0;
  std::atomic<size_t> used{0};
  std::function<void(void*)> release;
};

struct Batch {
  OutputSpec spec;
  size_t capacity = 0;  // samples the tensor has room for
  size_t size = 0;      // samples filled (the last batch of an epoch may be short)
  // [capacity, 3, h, w] (nchw) or [capacity, h, w, 3] (nhwc) of spec.dtype
  void* data = nullptr;
  std::vector<int32_t> labels;        // [capacity]
  std::vector<uint32_t> indices;      // [capacity] dataset index of each sample
  std::vector<uint64_t> sample_hash;  // [capacity] hash of each sample's tensor bytes
  std::vector<SampleTiming> timing;   // [capacity]
  uint64_t epoch = 0, number = 0;     // which batch of which epoch
  uint64_t checksum = 0;              // over labels and sample hashes, in order
  int64_t ready_ns = 0;               // when the last sample was written
  uint64_t reader_generation = 0;     // the Iterator's reader that filled it (its release())
  // --decode gpu (LoaderConfig::decode_device): per sample its bytes' place in `arena` and its
  // crop, or why the CPU decoded it into `data` (spec: u8 NHWC) instead. Empty otherwise.
  std::vector<EncodedSample> encoded;
  std::shared_ptr<EncodedArena> arena;

  void* sample(size_t i) const { return static_cast<char*>(data) + i * spec.sample_bytes(); }
  size_t bytes() const { return size * spec.sample_bytes(); }
  void finalize_checksum();
};

// `count` batches of `capacity` samples, allocated (by `memory.allocate` when set) and
// touched up front.
class BatchPool {
 public:
  BatchPool(size_t count, size_t capacity, const OutputSpec& spec, const HostMemory& memory = {});
  ~BatchPool();
  BatchPool(const BatchPool&) = delete;
  BatchPool& operator=(const BatchPool&) = delete;
  size_t count() const { return batches_.size(); }
  Batch& operator[](size_t i) { return batches_[i]; }
  std::span<Batch> all() { return batches_; }
  size_t bytes() const { return bytes_; }

 private:
  void free_all();
  std::vector<Batch> batches_;
  size_t bytes_ = 0;
  std::function<void(void*)> release_;  // memory.release, or null for std::free
};

}  // namespace stoker
