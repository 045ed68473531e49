// SPDX-License-Identifier: Apache-2.0
// How the GPU backend's host waits for device work: blocking when alone; under a data-parallel
// collective, polling NCCL's asynchronous error with a time limit, since a failed peer would
// otherwise hang this rank in cudaEventSynchronize, silently. Not the waits between streams
// (cudaStreamWaitEvent), which the device does.
#pragma once

#include <cuda_runtime_api.h>

#include "common/cuda/handle.h"
#include "train/collective.h"

namespace stoker::gpu {

struct DeviceWait {
  Collective* collective = nullptr;
  double timeout_s = 0;  // > 0: data parallel, waits poll the collective (wait_event)
  EventHandle drain;     // recorded at the end of a stream that wait_stream drains

  // Waits for `event`; with a timeout, gives up after it, aborting the communicator, and
  // throws stoker::Error naming the rank.
  void wait_event(cudaEvent_t event) const;
  // Waits for everything enqueued on `stream` so far, as wait_event does.
  void wait_stream(cudaStream_t stream) const;
};

}  // namespace stoker::gpu
