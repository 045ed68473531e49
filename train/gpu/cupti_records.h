// SPDX-License-Identifier: Apache-2.0
// CUPTI activity records to ActivityRecords (train/activity.h), without calling CUPTI: the
// clock conversion (CUPTI's timestamps to the host steady clock), the stream mapping (our
// compute and copy streams to fixed ids), and kernel names demangled and shortened for
// traces. cupti_activity.cc feeds it the records CUPTI hands over; tests feed it records
// built by hand. Header-only CUPTI types: this part links no CUDA library.
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "train/activity.h"

namespace stoker::gpu {

// Stream ids in the ActivityRecords a GPU backend returns (a CPU reports 0).
inline constexpr uint32_t kComputeStreamId = 1;
inline constexpr uint32_t kCopyStreamId = 2;
inline constexpr uint32_t kOtherStreamId = 3;  // any stream that is not the backend's

// steady_clock ns = CUPTI ns + offset_ns, measured once by reading both clocks.
struct ClockOffset {
  int64_t offset_ns = 0;
  int64_t uncertainty_ns = 0;  // half the steady-clock window the CUPTI read fell in
};
// From a steady-clock read, a CUPTI timestamp read, and a second steady-clock read.
ClockOffset calibrate(int64_t steady_before, uint64_t cupti_ns, int64_t steady_after);

// What a conversion needs to know about the backend that recorded.
struct RecordContext {
  ClockOffset clock;
  uint32_t compute_stream = UINT32_MAX;  // CUPTI's id of the backend's compute stream
  uint32_t copy_stream = UINT32_MAX;     // and of its copy stream
};

uint32_t map_stream(const RecordContext& ctx, uint32_t cupti_stream);

// "void cudnn::foo::bar<float, 3>(Params)" (or its mangled form "_Z...") -> "cudnn::foo::bar":
// return type, template arguments and parameters dropped, at most 96 characters.
std::string short_kernel_name(std::string_view name);

// The host steady clock (common/clock.h) in ns, as CUPTI's timestamp callback returns it.
uint64_t cupti_steady_timestamp();

// Whether records of this kind are intervals convert_record turns into ActivityRecords
// (kernel, concurrent kernel, memcpy, memset).
bool is_interval_kind(CUpti_ActivityKind kind);

// A kernel, memcpy or memset record as an ActivityRecord on the steady clock; nullopt for
// every other kind (and for records whose end precedes their start).
std::optional<ActivityRecord> convert_record(const CUpti_Activity& record,
                                             const RecordContext& ctx);

// The short name of the marker kernel a GPU backend launches on its compute stream at the
// start of each training step (when recording), so records can be told apart by step.
inline constexpr std::string_view kStepMarkerName = "stoker::gpu::stoker_step_marker";

// Sets `step` of records sorted by begin time (activity.h label_steps_by_markers with the
// marker kernel's name): each marker record (in order) starts the step given by the next entry
// of `marker_steps`, and every record after it, on any stream (a CUDA Graph's kernels run on
// streams CUPTI names apart from ours), is that step's until the next marker; records before
// the first marker keep theirs. Returns how many markers were consumed (markers beyond
// `marker_steps` end the labelling).
size_t assign_steps(std::vector<ActivityRecord>& sorted, const std::vector<int64_t>& marker_steps);

}  // namespace stoker::gpu
