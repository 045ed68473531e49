// SPDX-License-Identifier: Apache-2.0
// The GPU backend's steps in flight: one slot per uncollected step (the loop may leave up to
// Backend::kMaxPendingSteps), each with its events on the compute stream and what collect()
// needs to report it, plus the pinned memory the device writes each step's status and reads
// its hyper-parameters from. State only: the backend decides what to enqueue.
#pragma once

#include <array>
#include <cstdint>

#include "common/cuda/buffer.h"
#include "common/cuda/handle.h"
#include "train/backend.h"

namespace stoker::gpu {

constexpr int64_t kRing = Backend::kMaxPendingSteps;

// Events of one step on the compute stream.
enum StepEvent { kBegin, kStaged, kForward, kBackward, kUpdated, kEvents };

struct StepStatus {  // written by the device (async copies), read after the step's events
  float loss = 0;
  int32_t skipped = 0;
};

struct StepSlot {
  std::array<EventHandle, kEvents> events;
  bool updated = false;  // update() enqueued: kUpdated is recorded and the status has `skipped`
  bool graphed = false;  // ran as CUDA Graph launches
  int64_t stage = 0;     // the stage count of the step's batch (InputStaging::copy_events)
  // Host time of the step's enqueue: forward_backward()'s, plus update()'s from when it began.
  double enqueue_seconds = 0;
};

struct StepRing {
  std::array<StepSlot, kRing> slots;
  // Pinned, one entry per slot: a step's StepStatus, copied from the device; its SgdHyper,
  // copied to the device from here (an asynchronous copy reads the host memory later).
  PinnedBuffer status, hyper;
  int64_t begun = 0, collected = 0;
  size_t current = 0;  // the slot of the step begun last

  // Every slot's events (timed, blocking sync: host waits sleep instead of spinning).
  void create_events();
  void destroy_events();
  void allocate();  // status and hyper
  StepSlot& now() { return slots[current]; }
};

}  // namespace stoker::gpu
