// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/cupti_activity.h"

#include <cupti_activity.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "common/clock.h"
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
  uint64_t dropped = 0;
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
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS)
      if (auto r = convert_record(*record, s.ctx)) s.records.push_back(std::move(*r));
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS)
      s.dropped += dropped;
  }
  std::free(buffer);
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                         CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};

uint32_t stream_id(cudaStream_t stream) {
  unsigned long long id = 0;
  STOKER_GPU(cudaStreamGetId(stream, &id));
  return uint32_t(id);
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
    uint64_t cupti_now = 0;
    const int64_t before = now_ns();
    STOKER_GPU(cuptiGetTimestamp(&cupti_now));
    const int64_t after = now_ns();
    ctx.clock = calibrate(before, cupti_now, after);
    {
      std::lock_guard lock(s.mutex);
      s.ctx = ctx;
      s.records.clear();
      s.dropped = 0;
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
  STOKER_GPU(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
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
  return s.dropped;
}

}  // namespace stoker::gpu
