// SPDX-License-Identifier: Apache-2.0
// The GPU backend's host->device input staging: two device buffers, double-buffered, that a
// copy stream fills with batch k+1 while batch k computes (or a device producer, GPU decode,
// writes into), and their consumption on the compute stream into the network's input (the
// conversion to its dtype and layout). Events order the two streams; the copy's own events time
// each staged batch. Not the steps' own events (step_ring.h).
#pragma once

#include <array>
#include <cstdint>

#include "common/cuda/buffer.h"
#include "common/cuda/handle.h"
#include "train/backend.h"
#include "train/gpu/device_wait.h"
#include "train/gpu/kernels/kernels.h"
#include "train/gpu/step_ring.h"

namespace stoker::gpu {

class CudnnNet;

// Staged batches whose copy times are kept: a step reads its batch's, and at most kRing steps
// are uncollected plus one batch staged ahead.
constexpr int64_t kStageRing = kRing + 2;

struct InputStaging {
  StreamHandle copy;  // the copy stream; created by the backend, in its order of creation
  // Copy stream events around each staged batch's copy (begin, end), by stage count.
  std::array<std::array<EventHandle, 2>, kStageRing> copy_events;
  // Per buffer: its batch's copy ended (copy stream); its batch was read (compute stream).
  std::array<EventHandle, 2> copied, consumed;
  std::array<DeviceBuffer, 2> images, labels;
  std::array<PinnedBuffer, 2> pinned_labels;
  InputConversion conversion;
  int64_t stages = 0, staged_index = -1;  // batches staged so far; the newest one's count
  int next = 0, staged = -1;              // the buffer the next batch goes to; the newest's
  bool device_slot = false;               // device_stage() handed out next's buffer
  std::array<bool, 2> on_device{};        // each buffer's batch came from the device

  void create_events();
  void destroy_events();
  // Each buffer: `image_bytes` of images, `batch` labels (also in pinned memory).
  void allocate(size_t image_bytes, int64_t batch);
  // Backend::device_stage: the next buffer, for a producer on the copy stream.
  DeviceStage device_stage(DType dtype, Layout layout);
  // Backend::stage: the batch's copy (or only its labels, for a batch on the device) enqueued.
  void stage(const HostBatch& batch, const BackendConfig& config, const DeviceWait& wait);
  // Backend::release_input: waits until the newest batch's host memory has been copied.
  void release_input(const DeviceWait& wait) const;
  // The newest batch into the network's input (compute dtype and layout) and labels, enqueued
  // on `compute`. stoker::Error when nothing was staged.
  void consume(CudnnNet& net, const BackendConfig& config, cudaStream_t compute);
  // The (begin, end) events of the copy of the batch staged `stage`-th.
  const std::array<EventHandle, 2>& copy_span(int64_t stage) const {
    return copy_events[size_t(stage % kStageRing)];
  }
};

}  // namespace stoker::gpu
