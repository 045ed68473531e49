// SPDX-License-Identifier: Apache-2.0
// Where the compute engine's time goes between the work it was given: intervals of work
// (GPU kernels and copies from CUPTI, CPU primitives from the compute thread's clock), and
// the gaps between them. The same arithmetic answers "is the GPU idle
// between kernels, and is it because the loop waited for data?" on every machine.
// Pure functions over recorded intervals: no CUDA, no oneDNN here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/histogram.h"

namespace stoker {

// One interval of work on the compute engine. Times are nanoseconds on the host's
// steady_clock (common/clock.h): a GPU backend converts CUPTI's timestamps before
// returning them, so they line up with the loop's own wait intervals.
struct ActivityRecord {
  enum class Kind : uint8_t { kernel, memcpy, memset, primitive } kind = Kind::kernel;
  int64_t begin_ns = 0, end_ns = 0;
  uint32_t stream = 0;  // GPU stream id (compute, copy); 0 on a CPU
  std::string name;     // kernel or primitive name ("conv fwd layer1.0.conv1", ...)
  int64_t step = -1;    // training step it belongs to, when the backend knows
};

// A half-open interval [begin_ns, end_ns) on the steady clock, e.g. a data wait.
struct Interval {
  int64_t begin_ns = 0, end_ns = 0;
};

// Idle time of one engine inside a window.
struct GapStats {
  int64_t window_ns = 0;       // length of the window analysed
  int64_t busy_ns = 0;         // union of the work intervals, clipped to the window
  int64_t gap_ns = 0;          // window - busy: idle between (and around) the work
  uint64_t gaps = 0;           // idle intervals longer than the threshold
  int64_t longest_ns = 0;      // longest idle interval
  int64_t during_wait_ns = 0;  // idle time that coincides with the loop waiting for data
  Histogram histogram;         // of idle interval lengths
  double share() const { return window_ns > 0 ? double(gap_ns) / double(window_ns) : 0; }
};

// Busy/idle split of `work` (any order, overlaps merged) on [window_begin, window_end).
// Idle intervals shorter than `min_gap_ns` still count in gap_ns but not in `gaps` or the
// histogram (a kernel boundary on a GPU leaves ~1 us that is no one's fault).
// `waits`: the loop's data waits, to say how much idle time they explain.
GapStats gap_stats(std::span<const ActivityRecord> work, int64_t window_begin, int64_t window_end,
                   std::span<const Interval> waits = {}, int64_t min_gap_ns = 0);

// Records on one stream only (stream ids as the backend reports them).
std::vector<ActivityRecord> on_stream(std::span<const ActivityRecord> records, uint32_t stream);

// Whether a record is work of the compute engine: a kernel (any stream) or a CPU primitive.
// Copies and memsets are not: they run on copy engines (or are a few bytes set between kernels
// on the compute stream), and an engine that waits for its input copy is idle, which is what
// the gap figures must show.
bool is_engine_work(const ActivityRecord& r);

// Labels records sorted by begin time with their step: each record named `marker` starts the
// step given by the next entry of `marker_steps`, and every record that begins after it (on
// any stream: a CUDA Graph's kernels run on streams of their own) belongs to that step until
// the next marker. Records before the first marker keep theirs; markers beyond
// `marker_steps` end the labelling. Returns how many markers were consumed.
size_t label_steps_by_markers(std::vector<ActivityRecord>& sorted, std::string_view marker,
                              std::span<const int64_t> marker_steps);

// Gap statistics of one device step, windowed by the device's own records.
struct DeviceStepGaps {
  int64_t step = 0;                  // ActivityRecord::step of the records analysed
  int64_t begin_ns = 0, end_ns = 0;  // the window: the step's GPU span
  GapStats stats;
};

// A device runs behind the host, so the host's step windows do not bound its work: each
// step is windowed by its own records (those with step >= 0, on every stream), from the
// first record of step k to the first record of the next step present, so the idle time
// between the last kernel of step k and the first of step k+1 (a starved or synchronising
// host) belongs to step k. The last step present has no successor: with `close_last` its
// window ends with its last record's end, otherwise it is left out (the caller keeps its
// records and passes them again with the next step's). Busy time is the union of the
// step's kernels (is_engine_work), whatever their stream; the kernel-gap share is then
// 1 - busy / window. `waits`: the loop's data waits on the same steady clock, sorted by
// begin and disjoint (as the loop produces them); each step's idle time is intersected with
// every wait inside its window, whichever host step it was.
std::vector<DeviceStepGaps> device_step_gaps(std::span<const ActivityRecord> records,
                                             std::span<const Interval> waits, bool close_last,
                                             int64_t min_gap_ns = 0);

}  // namespace stoker
