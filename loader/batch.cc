// SPDX-License-Identifier: Apache-2.0
#include "loader/batch.h"

#include <xxhash.h>

#include <cstdlib>
#include <cstring>

#include "common/error.h"

namespace stoker {

void Batch::finalize_checksum() {
  const uint64_t h = XXH3_64bits(labels.data(), size * sizeof(int32_t));
  checksum = XXH3_64bits_withSeed(sample_hash.data(), size * sizeof(uint64_t), h);
}

EncodedArena::EncodedArena(size_t bytes, const HostMemory& memory)
    : capacity((bytes + 4095) / 4096 * 4096), release(memory.release) {
  data = static_cast<uint8_t*>(memory.allocate ? memory.allocate(capacity)
                                               : std::aligned_alloc(4096, capacity));
  if (!data) fail("cannot allocate a byte arena of {} bytes for GPU decode", capacity);
}

EncodedArena::~EncodedArena() {
  if (release) {
    release(data);
  } else {
    std::free(data);
  }
}

uint8_t* EncodedArena::reserve(size_t n, uint64_t& offset) {
  const size_t rounded = (n + 63) / 64 * 64;
  const size_t at = used.fetch_add(rounded, std::memory_order_relaxed);
  if (at + rounded > capacity) return nullptr;  // `used` stays past the end: nothing else fits
  offset = at;
  return data + at;
}

BatchPool::BatchPool(size_t count, size_t capacity, const OutputSpec& spec,
                     const HostMemory& memory) {
  STOKER_CHECK(count > 0 && capacity > 0);
  STOKER_CHECK_MSG(!memory.allocate == !memory.release, "allocate and release come together");
  release_ = memory.release;
  batches_.resize(count);
  const size_t tensor = capacity * spec.sample_bytes();
  const size_t rounded = (tensor + 4095) / 4096 * 4096;
  for (Batch& b : batches_) {
    b.spec = spec;
    b.capacity = capacity;
    try {
      b.data = memory.allocate ? memory.allocate(rounded) : std::aligned_alloc(4096, rounded);
      if (!b.data) fail("cannot allocate a batch of {} bytes", rounded);
    } catch (...) {  // no destructor runs for a half-made pool: give back (unpin) the rest
      free_all();
      throw;
    }
    std::memset(b.data, 0, rounded);  // touch now: resident memory is flat from here on
    b.labels.assign(capacity, 0);
    b.indices.assign(capacity, 0);
    b.sample_hash.assign(capacity, 0);
    b.timing.assign(capacity, {});
    bytes_ += rounded;
  }
}

BatchPool::~BatchPool() {
  free_all();
}

void BatchPool::free_all() {
  for (Batch& b : batches_) {
    if (b.data == nullptr) continue;
    if (release_) {
      release_(b.data);
    } else {
      std::free(b.data);
    }
    b.data = nullptr;
  }
}

}  // namespace stoker
