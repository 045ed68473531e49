// SPDX-License-Identifier: Apache-2.0
// Everything that decides what a loader produces and how: reader, sampler, transform,
// output format, decode limits and the on-error policy. Plain data, filled from the CLI.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "augment/collate.h"
#include "augment/crop.h"
#include "augment/decoder.h"
#include "loader/bad_samples.h"
#include "loader/host_memory.h"
#include "loader/readers/reader_spec.h"
#include "loader/sampler/sampler.h"
#include "loader/sampler/size_schedule.h"
#include "loader/sources/source.h"

namespace stoker {

// Where images are decoded (--decode): on the CPU, or by the GPU decoder (augment/gpu/): the
// CPU then reads each file, parses its header and plans its crop exactly as CPU decode does,
// and puts the bytes in the batch's arena; it decodes only what the GPU cannot take
// (augment/gpu/encoded_sample.h), antialiased as the GPU resizes. "auto" is the front end's
// choice between the two, made before a loader exists.
enum class DecodeDevice { cpu, gpu };

struct LoaderConfig {
  ReaderSpec reader;
  SamplerConfig sampler;
  size_t prefetch = 2;  // batches prepared ahead of the one the consumer holds
  TransformConfig transform;
  OutputSpec output;  // width/height follow transform.out_width()/out_height()
  // When active, the side of each batch (square) follows this schedule of the epoch or step
  // instead of transform.size; the pool is sized for its largest side.
  SizeSchedule size_schedule;
  DecodeOptions decode;
  DecodeDevice decode_device = DecodeDevice::cpu;
  // --decode gpu: bytes of file data a batch may hold (0: 512 KiB a sample); one batch buffer
  // of the pool holds one arena.
  size_t decode_arena = 0;
  ErrorPolicy on_error = ErrorPolicy::skip;
  size_t max_replacements = 64;  // consecutive failures before giving up under `skip`
  bool warn = true;              // one-line warning per bad file on stderr
  bool no_decode = false;        // read only: measure the storage path through the reader
  // Where bytes come from (--source; auto picks from the dataset and the reader) and how they
  // are read (--direct, --cold, --null-file).
  SourceOptions source;
  HostMemory memory;  // where batch tensors live (default: the heap)
  // Extra pool buffers for batches the consumer keeps past next() (Iterator::retain; the
  // Python module keeps every batch until its last reference goes).
  size_t keep = 0;
  // Called by the consumer's thread, unlocked, every 50 ms while next() waits (and between
  // samples under serial); may throw to abandon the wait. The Python module checks for
  // Ctrl-C here, since a signal does not wake a blocked wait.
  std::function<void()> poll;
};

// Batch buffers of a prefetching reader: `prefetch` in flight, the one the consumer holds,
// and `keep` it may retain.
inline size_t pool_batches(const LoaderConfig& c) {
  return c.prefetch + 1 + c.keep;
}

}  // namespace stoker
