// SPDX-License-Identifier: Apache-2.0
#include "loader/sample_trace.h"

#include <fmt/format.h>

#include <set>
#include <utility>

namespace stoker {

void add_sample_tracks(TraceWriter& w, int pid, const std::string& process_name,
                       std::span<const std::vector<SampleTiming>> batches,
                       std::span<const int64_t> numbers) {
  std::set<int32_t> threads;
  for (size_t k = 0; k < batches.size(); ++k) {
    for (size_t i = 0; i < batches[k].size(); ++i) {
      const SampleTiming& t = batches[k][i];
      if (t.start_ns == 0) continue;
      threads.insert(t.thread);
      const std::string n = fmt::format(" {}/{}", k < numbers.size() ? numbers[k] : int64_t(k), i);
      int64_t at = t.start_ns;
      for (const auto& [stage, ns] : {std::pair{"read", t.read_ns},
                                      {"decode", t.decode_ns},
                                      {"augment", t.augment_ns},
                                      {"collate", t.collate_ns}}) {
        if (ns > 0) w.event(pid, t.thread, stage + n, at, at + ns, "loader");
        at += ns;
      }
    }
  }
  if (!threads.empty()) w.process(pid, process_name);
  int index = 0;
  for (int32_t tid : threads) w.track(pid, tid, fmt::format("loader thread {}", tid), index++);
}

}  // namespace stoker
