// SPDX-License-Identifier: Apache-2.0
// The NCCL engine of collective_engines.h: device buffers and one stream, the communicator made
// once every rank has said it has a device.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "collective_engines.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/device.h"
#include "train/gpu/gpu_memory.h"
#include "train/parallel/collective_nccl.h"
#include "train/parallel/collectives.h"

namespace stoker::test {
namespace {

class DeviceMemory final : public EngineMemory {
 public:
  explicit DeviceMemory(int device) {
    STOKER_GPU(cudaSetDevice(device));
    STOKER_GPU(cudaStreamCreate(&stream_));
  }
  ~DeviceMemory() override {
    buffers_.clear();
    cudaStreamDestroy(stream_);
  }
  CollectiveMemory where() const override { return {.device = true, .stream = stream_}; }
  void* allocate(size_t bytes) override { return buffers_.emplace_back(bytes).get(); }
  void copy_in(void* dst, const void* src, size_t bytes) override {
    STOKER_GPU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
    STOKER_GPU(cudaStreamSynchronize(stream_));
  }
  void copy_out(void* dst, const void* src, size_t bytes) override {
    STOKER_GPU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
    STOKER_GPU(cudaStreamSynchronize(stream_));
  }

 private:
  cudaStream_t stream_ = nullptr;
  std::deque<gpu::DeviceBuffer> buffers_;
};

}  // namespace

DeviceEngine make_nccl_engine(Collective& host) {
  const int device = mpirun_local_rank();
  DeviceEngine e;
  e.why_not = gpu::device_unavailable_reason(device);
  // A rank that made a communicator while another skipped would wait for it forever.
  float missing = e.why_not.empty() ? 0.0f : 1.0f;
  host.allreduce_sum(&missing, 1);
  if (missing > 0) {
    // Worded as the skip policy's device skip (tests/skip_policy.h): a device is missing.
    const std::string mine = e.why_not.empty() ? "this rank has one" : e.why_not;
    if (e.why_not.find("no CUDA device") == std::string::npos)
      e.why_not =
          fmt::format("no CUDA device for {} of {} ranks ({})", int(missing), host.world(), mine);
    return e;
  }
  e.memory = std::make_unique<DeviceMemory>(device);
  e.collective = make_device_collective(host, device);
  return e;
}

}  // namespace stoker::test
