// SPDX-License-Identifier: Apache-2.0
// Batch memory kept across reader switches (Iterator::switch_reader, `--reader auto`): when a
// reader goes, its pool's buffers come back here, and the next reader's pool takes them,
// already resident (and pinned, under a device's HostMemory), instead of allocating and
// touching tens of MB again: that was most of a switch's cost (docs/PERFORMANCE.md). Buffers
// are matched by size; what the next pool does not take is kept until the recycler goes, so
// the memory held is at most the largest pool's, whatever the number of switches.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "loader/host_memory.h"

namespace stoker {

class BufferRecycler {
 public:
  // `upstream`: where memory really comes from (null allocate: the aligned heap).
  explicit BufferRecycler(HostMemory upstream);
  // Every kept buffer goes back upstream; one still out (a batch's arena kept past its
  // iterator) goes back upstream when it is released.
  ~BufferRecycler();
  BufferRecycler(const BufferRecycler&) = delete;
  BufferRecycler& operator=(const BufferRecycler&) = delete;

  // `upstream` with allocate and release through this recycler (pin and unpin: upstream's);
  // copies may outlive it. Any thread.
  HostMemory memory() const;

 private:
  struct State {
    HostMemory upstream;
    std::mutex mu;
    bool closed = false;                    // the recycler is gone: release goes upstream
    std::multimap<size_t, void*> free;      // by size
    std::unordered_map<void*, size_t> out;  // handed out now: their sizes
    void* take(size_t bytes);
    void give(void* p);
    void free_upstream(void* p) const;
  };
  std::shared_ptr<State> state_;
};

}  // namespace stoker
