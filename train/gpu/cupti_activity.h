// SPDX-License-Identifier: Apache-2.0
// Records every kernel, memcpy and memset the process runs through CUPTI's Activity API, as
// ActivityRecords on the host steady clock (CUPTI takes its timestamps from it through
// cuptiActivityRegisterTimestampCallback; conversion in cupti_records.h). CUPTI's activity
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

  // Flushes CUPTI's completed buffers (call after synchronising every stream that ran work)
  // and returns the records since the last call, sorted by begin time.
  std::vector<ActivityRecord> take();
  // Records lost since the recorder started: dropped by CUPTI for lack of buffer space, or
  // delivered without timestamps. Gap figures over-state idle time by what these covered.
  uint64_t dropped() const;
};

}  // namespace stoker::gpu
