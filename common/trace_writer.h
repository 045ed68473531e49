// SPDX-License-Identifier: Apache-2.0
// Chrome trace-event JSON (the format Perfetto and chrome://tracing open): named tracks
// (thread_name metadata) and complete events ("ph":"X") with steady-clock nanosecond
// times, written in microseconds from the earliest event. Events are sorted per track on
// write, so each track's timestamps are monotonic. Not a streaming writer: the caller bounds
// what it adds (a window of steps).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stoker {

// The half-open window [first, last) of steps or batches a trace keeps (its size bound).
struct TraceWindow {
  int64_t first = 0, last = 0;
  bool contains(int64_t i) const { return i >= first && i < last; }
};
// "A:B" as a window; stoker::Error "<option> '<spec>': ..." (option may be empty) when it is not
// two integers with A < B (`unit` says what they count, e.g. "global steps").
TraceWindow parse_trace_window(std::string_view spec, std::string_view option,
                               std::string_view unit);

class TraceWriter {
 public:
  // A track (thread) of process `pid`, shown as `name`, sorted by `sort_index`.
  void track(int pid, int64_t tid, std::string name, int sort_index = 0);
  void process(int pid, std::string name);
  // A complete event [begin_ns, end_ns) on a track; `category` groups events in the viewer.
  void event(int pid, int64_t tid, std::string name, int64_t begin_ns, int64_t end_ns,
             std::string category = {});
  size_t events() const { return events_.size(); }
  // stoker::Error naming `path` when it cannot be written.
  void write(const std::string& path) const;
  std::string json() const;

 private:
  struct Event {
    int pid;
    int64_t tid;
    std::string name, category;
    int64_t begin_ns, end_ns;
  };
  struct Track {
    int pid;
    int64_t tid;
    std::string name;
    int sort_index;
  };
  std::vector<Event> events_;
  std::vector<Track> tracks_;
  std::vector<std::pair<int, std::string>> processes_;
};

}  // namespace stoker
