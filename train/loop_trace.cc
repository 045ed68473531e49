// SPDX-License-Identifier: Apache-2.0
#include "train/loop_trace.h"

#include <fmt/format.h>

#include <set>

#include "loader/sample_trace.h"

namespace stoker {

TraceWriter loop_trace(const LoopTrace& trace, const std::string& engine) {
  constexpr int kPid = 1, kLoaderPid = 2;  // loader tracks are OS thread ids: their own pid
  TraceWriter w;
  w.process(kPid, "stoker train");
  w.track(kPid, kLoopTrack, "training loop", 0);
  for (size_t k = 0; k < trace.steps.size(); ++k) {
    const StepRecord& r = trace.steps[k];
    const std::string n = fmt::format(" {}", trace.numbers[k]);
    w.event(kPid, kLoopTrack, "wait" + n, r.begin_ns, r.wait_end_ns, "loop");
    w.event(kPid, kLoopTrack, "stage" + n, r.wait_end_ns, r.stage_end_ns, "loop");
    w.event(kPid, kLoopTrack, "forward+backward" + n, r.stage_end_ns, r.fb_end_ns, "loop");
    w.event(kPid, kLoopTrack, "update" + n, r.fb_end_ns, r.end_ns, "loop");
  }
  std::set<uint32_t> streams;
  for (const ActivityRecord& a : trace.activity) {
    streams.insert(a.stream);
    w.event(kPid, kStreamTrackBase + a.stream, a.name, a.begin_ns, a.end_ns,
            a.kind == ActivityRecord::Kind::primitive ? "primitive"
            : a.kind == ActivityRecord::Kind::kernel  ? "kernel"
                                                      : "copy");
  }
  for (uint32_t s : streams)
    w.track(kPid, kStreamTrackBase + s, fmt::format("{} stream {}", engine, s), 1);
  add_sample_tracks(w, kLoaderPid, "loader", trace.samples, trace.numbers);
  return w;
}

}  // namespace stoker
