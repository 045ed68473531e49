// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/input_staging.h"

#include <cstring>

#include "common/error.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/cudnn_net.h"

namespace stoker::gpu {

void InputStaging::create_events() {
  for (auto& pair : copy_events)
    for (EventHandle& e : pair)
      STOKER_GPU(cudaEventCreateWithFlags(e.out(), cudaEventBlockingSync));
  // Only ordered and waited on, never timed.
  constexpr unsigned kSyncOnly = cudaEventBlockingSync | cudaEventDisableTiming;
  for (size_t s = 0; s < 2; ++s) {
    STOKER_GPU(cudaEventCreateWithFlags(copied[s].out(), kSyncOnly));
    STOKER_GPU(cudaEventCreateWithFlags(consumed[s].out(), kSyncOnly));
  }
}

void InputStaging::destroy_events() {
  for (auto& pair : copy_events)
    for (EventHandle& e : pair) e.reset();
  for (EventHandle* e : {&copied[0], &copied[1], &consumed[0], &consumed[1]}) e->reset();
}

void InputStaging::allocate(size_t image_bytes, int64_t batch) {
  for (size_t s = 0; s < 2; ++s) {
    images[s] = DeviceBuffer(image_bytes);
    labels[s] = DeviceBuffer(size_t(batch) * sizeof(int32_t));
    // Labels go through pinned memory: a pageable copy would be staged synchronously.
    pinned_labels[s] = PinnedBuffer(size_t(batch) * sizeof(int32_t));
  }
}

DeviceStage InputStaging::device_stage(DType dtype, Layout layout) {
  if (!device_slot) {
    const size_t slot = size_t(next);
    // The buffer's previous batch must have been converted before it is overwritten; the
    // copy's timing starts here and so covers the producer's work (the decode).
    STOKER_GPU(cudaStreamWaitEvent(copy, consumed[slot], 0));
    STOKER_GPU(cudaEventRecord(copy_events[size_t(stages % kStageRing)][0], copy));
    device_slot = true;
  }
  return {images[size_t(next)].get(), copy.get(), dtype, layout};
}

void InputStaging::stage(const HostBatch& batch, const BackendConfig& config,
                         const DeviceWait& wait) {
  if (batch.on_device && !device_slot)
    fail("cuda backend: a batch on the device without device_stage() first");
  if (!batch.on_device && device_slot)
    fail("cuda backend: device_stage() was followed by a host batch");
  const size_t slot = size_t(next);
  next ^= 1;
  // The pinned labels of this slot were copied two batches ago (long done): wait for that
  // copy before they are overwritten. Polling, as every wait: the copy stream waits on the
  // compute stream, which a dead peer's all-reduce can hold forever.
  wait.wait_event(copied[slot]);
  std::memcpy(pinned_labels[slot].get(), batch.labels, size_t(batch.count) * sizeof(int32_t));
  auto& times = copy_events[size_t(stages % kStageRing)];
  if (batch.on_device) {
    device_slot = false;  // its copy-stream work (device_stage's producer) is enqueued
  } else {
    // The buffer's previous batch must have been converted before it is overwritten.
    STOKER_GPU(cudaStreamWaitEvent(copy, consumed[slot], 0));
    STOKER_GPU(cudaEventRecord(times[0], copy));
    STOKER_GPU(cudaMemcpyAsync(
        images[slot].get(), batch.images,
        size_t(batch.count * 3 * config.height * config.width) * config.input.element_bytes(),
        cudaMemcpyHostToDevice, copy));
  }
  on_device[slot] = batch.on_device;
  STOKER_GPU(cudaMemcpyAsync(labels[slot].get(), pinned_labels[slot].get(),
                             size_t(batch.count) * sizeof(int32_t), cudaMemcpyHostToDevice, copy));
  STOKER_GPU(cudaEventRecord(times[1], copy));
  STOKER_GPU(cudaEventRecord(copied[slot], copy));
  staged = int(slot);
  staged_index = stages++;
}

void InputStaging::release_input(const DeviceWait& wait) const {
  if (staged >= 0) wait.wait_event(copied[size_t(staged)]);
}

void InputStaging::consume(CudnnNet& net, const BackendConfig& config, cudaStream_t compute) {
  if (staged < 0) fail("cuda backend: no batch staged (call stage() first)");
  const size_t s = size_t(staged);
  STOKER_GPU(cudaStreamWaitEvent(compute, copied[s], 0));
  if (on_device[s]) {  // written by a device producer in the network's format already
    STOKER_GPU(cudaMemcpyAsync(
        net.input(), images[s].get(),
        size_t(config.batch * 3 * config.height * config.width) * dtype_bytes(net.dtype()),
        cudaMemcpyDeviceToDevice, compute));
  } else {
    convert_input(conversion, images[s].get(), net.input(), compute);
  }
  STOKER_GPU(cudaMemcpyAsync(net.labels(), labels[s].get(), labels[s].bytes(),
                             cudaMemcpyDeviceToDevice, compute));
  STOKER_GPU(cudaEventRecord(consumed[s], compute));
}

}  // namespace stoker::gpu
