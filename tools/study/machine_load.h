// SPDX-License-Identifier: Apache-2.0
// How loaded the machine was while the study ran (issue 47): its load average, and the CPU
// time the whole machine spent against the study's own (itself and its reaped worker
// processes), from a start mark to now. The report says it beside the figures, since a
// shared machine's other work slows every cell. Linux (/proc); elsewhere the fields are absent.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>

namespace stoker {

struct LoadMark {
  int64_t t_ns = 0;
  double machine_busy_s = -1;  // all CPUs' non-idle time (/proc/stat); -1: unknown
  double own_s = 0;            // this process and its reaped children
  nlohmann::json loadavg;      // [1, 5, 15 min] or null
};

LoadMark load_mark();
// {"loadavg_start", "loadavg_now", "machine_cores_busy", "study_cores_busy",
//  "other_cores_busy"}: cores busy on average since `start`.
nlohmann::json machine_load_json(const LoadMark& start);

}  // namespace stoker
