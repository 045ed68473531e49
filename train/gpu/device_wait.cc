// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/device_wait.h"

#include <chrono>

#include "common/error.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/gpu_policy.h"

namespace stoker::gpu {

void DeviceWait::wait_event(cudaEvent_t event) const {
  Collective* c = collective;
  if (timeout_s <= 0 || c == nullptr) {
    STOKER_GPU(cudaEventSynchronize(event));
    return;
  }
  const bool done = wait_polling(
      [&] {
        const cudaError_t st = cudaEventQuery(event);
        if (st == cudaErrorNotReady) return false;
        STOKER_GPU(st);
        return true;
      },
      [&] { c->check_async(); }, timeout_s, std::chrono::microseconds(200));
  if (!done) {
    c->abort_communicator();
    fail(
        "cuda backend: rank {} of {} waited {:.0f} s for the device without progress; the "
        "communicator was aborted (a peer rank may have failed; STOKER_NCCL_TIMEOUT_S sets "
        "the limit)",
        c->rank(), c->world(), timeout_s);
  }
}

void DeviceWait::wait_stream(cudaStream_t stream) const {
  if (timeout_s <= 0) {
    STOKER_GPU(cudaStreamSynchronize(stream));
    return;
  }
  // An event, not cudaStreamSynchronize: only an event can be polled.
  STOKER_GPU(cudaEventRecord(drain, stream));
  wait_event(drain);
}

}  // namespace stoker::gpu
