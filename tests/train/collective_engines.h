// SPDX-License-Identifier: Apache-2.0
// The engines the collective suite (collective_test.cc) runs over, and where each one's
// tensors live: host memory for the world of one and MPI, device memory on a CUDA stream for
// NCCL, copied in and out around each call. Test scaffolding only, not a Collective of its own.
#pragma once

#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "train/collective.h"

namespace stoker::test {

class EngineMemory {
 public:
  virtual ~EngineMemory() = default;
  // What the collective is handed with each buffer.
  virtual CollectiveMemory where() const = 0;
  // `bytes` of the engine's memory, freed with this object.
  virtual void* allocate(size_t bytes) = 0;
  virtual void copy_in(void* dst, const void* src, size_t bytes) = 0;
  // After the work the collective enqueued (device) or did (host).
  virtual void copy_out(void* dst, const void* src, size_t bytes) = 0;
};

class HostMemory final : public EngineMemory {
 public:
  CollectiveMemory where() const override { return {}; }
  void* allocate(size_t bytes) override { return blocks_.emplace_back(bytes).data(); }
  void copy_in(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void copy_out(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }

 private:
  std::deque<std::vector<unsigned char>> blocks_;
};

// NCCL on this rank's CUDA device (mpirun_local_rank()) over `host`'s ranks. Every rank must
// call it: the ranks agree first whether each has a device, so either all make one or none
// does. Null collective, with the reason ("no CUDA device ..."), where any rank has none.
// Defined where the build has NCCL (STOKER_HAVE_NCCL).
struct DeviceEngine {
  std::unique_ptr<Collective> collective;
  std::unique_ptr<EngineMemory> memory;
  std::string why_not;
};
DeviceEngine make_nccl_engine(Collective& host);

}  // namespace stoker::test
