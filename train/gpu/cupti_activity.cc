// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/cupti_activity.h"

#include <cupti_activity.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "common/error.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/cupti_records.h"

namespace stoker::gpu {
namespace {

constexpr size_t kBufferBytes = size_t(8) << 20;
constexpr size_t kAlign = 8;  // CUPTI's requirement for activity buffers

// CUPTI calls the buffer callbacks from its own thread: the state they share lives here.
struct Shared {
  std::mutex mutex;
  RecordContext ctx;
  std::vector<ActivityRecord> records;
  uint64_t dropped = 0;     // CUPTI's count: records lost for lack of buffer space
  uint64_t incomplete = 0;  // kernel/memcpy/memset records delivered without timestamps
  bool active = false;
};
Shared& shared() {
  static Shared s;
  return s;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                               size_t /*size*/, size_t valid) {
  Shared& s = shared();
  {
    std::lock_guard lock(s.mutex);
    CUpti_Activity* record = nullptr;
    // Errors here cannot be thrown across CUPTI's thread: a bad buffer ends this one.
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      if (auto r = convert_record(*record, s.ctx))
        s.records.push_back(std::move(*r));
      else if (is_interval_kind(record->kind))
        ++s.incomplete;
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS)
      s.dropped += dropped;
  }
  std::free(buffer);
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                         CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};

// The id CUPTI's records carry for `stream`: CUPTI's own (cuptiGetStreamIdEx, documented as
// the stream's id in activity records), not the runtime's cudaStreamGetId, which CUPTI does
// not promise to match (bench/gpu_facts.cc prints both on a device).
uint32_t stream_id(cudaStream_t stream) {
  uint32_t id = 0;
  STOKER_GPU(cuptiGetStreamIdEx(nullptr, stream, 0, &id));
  return id;
}

// CUPTI's timestamps on the host steady clock itself (every record, GPU ones converted by
// CUPTI), instead of CLOCK_REALTIME plus an offset measured once that NTP slews would move.
uint64_t CUPTIAPI steady_timestamp() {
  return cupti_steady_timestamp();
}

}  // namespace

CuptiRecorder::CuptiRecorder(cudaStream_t compute, cudaStream_t copy) {
  Shared& s = shared();
  {
    std::lock_guard lock(s.mutex);
    if (s.active) fail("CUPTI activity: another backend in this process is already recording");
    s.active = true;
  }
  try {
    RecordContext ctx;
    ctx.compute_stream = stream_id(compute);
    ctx.copy_stream = stream_id(copy);
    // Before any kind is enabled (CUPTI's rule), so that every record uses it.
    STOKER_GPU(cuptiActivityRegisterTimestampCallback(steady_timestamp));
    ctx.clock = ClockOffset{};  // the timestamps are the steady clock's already
    {
      std::lock_guard lock(s.mutex);
      s.ctx = ctx;
      s.records.clear();
      s.dropped = 0;
      s.incomplete = 0;
    }
    STOKER_GPU(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    for (CUpti_ActivityKind kind : kKinds) STOKER_GPU(cuptiActivityEnable(kind));
  } catch (...) {
    for (CUpti_ActivityKind kind : kKinds) cuptiActivityDisable(kind);
    std::lock_guard lock(s.mutex);
    s.active = false;
    throw;
  }
}

CuptiRecorder::~CuptiRecorder() {
  for (CUpti_ActivityKind kind : kKinds) cuptiActivityDisable(kind);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  Shared& s = shared();
  std::lock_guard lock(s.mutex);
  s.records.clear();
  s.active = false;
}

std::vector<ActivityRecord> CuptiRecorder::take() {
  // A default flush: the caller synchronised every stream, so the buffers are complete, and
  // CUPTI delivers only complete ones (a forced flush, meant for the end of a session, would
  // hand over records still lacking timestamps). The destructor forces the rest out.
  STOKER_GPU(cuptiActivityFlushAll(0));
  std::vector<ActivityRecord> out;
  {
    Shared& s = shared();
    std::lock_guard lock(s.mutex);
    out.swap(s.records);
  }
  std::stable_sort(out.begin(), out.end(), [](const ActivityRecord& a, const ActivityRecord& b) {
    return a.begin_ns < b.begin_ns;
  });
  return out;
}

uint64_t CuptiRecorder::dropped() const {
  Shared& s = shared();
  std::lock_guard lock(s.mutex);
  return s.dropped + s.incomplete;
}

}  // namespace stoker::gpu
