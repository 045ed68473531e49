// SPDX-License-Identifier: Apache-2.0
// Records every kernel, memcpy and memset the process runs through CUPTI's Activity API, as
// ActivityRecords on the host steady clock (conversion in cupti_records.h). CUPTI's activity
// buffers are process-wide, so one recorder may be active at a time. Not a profiler of
// anything else (no metrics, no callbacks on API calls).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "train/activity.h"

namespace stoker::gpu {

class CuptiRecorder {
 public:
  // Enables CONCURRENT_KERNEL, MEMCPY and MEMSET activity; `compute` and `copy` are the
  // streams reported as kComputeStreamId and kCopyStreamId. stoker::Error when CUPTI refuses
  // (another recorder active, no profiling permission).
  CuptiRecorder(cudaStream_t compute, cudaStream_t copy);
  ~CuptiRecorder();
  CuptiRecorder(const CuptiRecorder&) = delete;
  CuptiRecorder& operator=(const CuptiRecorder&) = delete;

  // Flushes CUPTI's buffers (records of finished work only: call after a synchronisation)
  // and returns the records since the last call, sorted by begin time.
  std::vector<ActivityRecord> take();
  // Records CUPTI dropped for lack of buffer space since the recorder started.
  uint64_t dropped() const;
};

}  // namespace stoker::gpu
