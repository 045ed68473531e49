// SPDX-License-Identifier: Apache-2.0
#include "loader/buffer_recycler.h"

#include <cstdlib>

#include "common/error.h"

namespace stoker {

BufferRecycler::BufferRecycler(HostMemory upstream) : state_(std::make_shared<State>()) {
  state_->upstream = std::move(upstream);
}

BufferRecycler::~BufferRecycler() {
  std::lock_guard<std::mutex> lock(state_->mu);
  state_->closed = true;
  for (const auto& [bytes, p] : state_->free) state_->free_upstream(p);
  state_->free.clear();
}

HostMemory BufferRecycler::memory() const {
  HostMemory m = state_->upstream;
  m.allocate = [s = state_](size_t bytes) { return s->take(bytes); };
  m.release = [s = state_](void* p) { s->give(p); };
  return m;
}

void BufferRecycler::State::free_upstream(void* p) const {
  if (upstream.release) {
    upstream.release(p);
  } else {
    std::free(p);
  }
}

void* BufferRecycler::State::take(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (const auto it = free.find(bytes); it != free.end()) {
      void* p = it->second;
      free.erase(it);
      out[p] = bytes;
      return p;
    }
  }
  void* p = upstream.allocate ? upstream.allocate(bytes) : std::aligned_alloc(4096, bytes);
  if (p == nullptr) fail("cannot allocate a batch of {} bytes", bytes);
  std::lock_guard<std::mutex> lock(mu);
  out[p] = bytes;
  return p;
}

void BufferRecycler::State::give(void* p) {
  std::lock_guard<std::mutex> lock(mu);
  const auto it = out.find(p);
  STOKER_CHECK_MSG(it != out.end(), "a buffer this recycler did not hand out");
  if (closed) {
    free_upstream(p);
  } else {
    free.emplace(it->second, p);
  }
  out.erase(it);
}

}  // namespace stoker
