// SPDX-License-Identifier: Apache-2.0
#include "train/loop_trace.h"

#include <fmt/format.h>

#include <set>

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
  std::set<int32_t> workers;
  for (size_t k = 0; k < trace.samples.size(); ++k) {
    for (size_t i = 0; i < trace.samples[k].size(); ++i) {
      const SampleTiming& t = trace.samples[k][i];
      if (t.start_ns == 0) continue;
      workers.insert(t.worker);
      const std::string n =
          fmt::format(" {}/{}", k < trace.numbers.size() ? trace.numbers[k] : int64_t(k), i);
      int64_t at = t.start_ns;
      for (const auto& [stage, ns] : {std::pair{"read", t.read_ns},
                                      {"decode", t.decode_ns},
                                      {"augment", t.augment_ns},
                                      {"collate", t.collate_ns}}) {
        if (ns > 0) w.event(kLoaderPid, t.worker, stage + n, at, at + ns, "loader");
        at += ns;
      }
    }
  }
  if (!workers.empty()) w.process(kLoaderPid, "loader");
  int index = 0;
  for (int32_t worker : workers)
    w.track(kLoaderPid, worker, fmt::format("loader worker {}", worker), index++);
  return w;
}

}  // namespace stoker
