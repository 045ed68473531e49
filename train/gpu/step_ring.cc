// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/step_ring.h"

#include "train/gpu/cuda_check.h"
#include "train/gpu/step_math.h"

namespace stoker::gpu {

void StepRing::create_events() {
  for (StepSlot& slot : slots)
    for (EventHandle& e : slot.events)
      STOKER_GPU(cudaEventCreateWithFlags(e.out(), cudaEventBlockingSync));
}

void StepRing::destroy_events() {
  for (StepSlot& slot : slots)
    for (EventHandle& e : slot.events) e.reset();
}

void StepRing::allocate() {
  status = PinnedBuffer(size_t(kRing) * sizeof(StepStatus));
  hyper = PinnedBuffer(size_t(kRing) * sizeof(SgdHyper));
}

}  // namespace stoker::gpu
