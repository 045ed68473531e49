// SPDX-License-Identifier: Apache-2.0
// gap_stats: sort, merge, clip, then walk the complement. The waits are merged the same way
// and intersected with each idle interval by a second pointer, so the whole analysis is
// O(n log n) in the records and the waits.
#include "train/activity.h"

#include <algorithm>

namespace stoker {
namespace {

// The union of [begin, end) intervals clipped to [lo, hi), sorted and disjoint.
std::vector<Interval> merged(std::vector<Interval> v, int64_t lo, int64_t hi) {
  std::vector<Interval> out;
  for (Interval& i : v) {
    i.begin_ns = std::max(i.begin_ns, lo);
    i.end_ns = std::min(i.end_ns, hi);
  }
  std::erase_if(v, [](const Interval& i) { return i.end_ns <= i.begin_ns; });
  std::sort(v.begin(), v.end(),
            [](const Interval& a, const Interval& b) { return a.begin_ns < b.begin_ns; });
  for (const Interval& i : v) {
    if (!out.empty() && i.begin_ns <= out.back().end_ns) {
      out.back().end_ns = std::max(out.back().end_ns, i.end_ns);
    } else {
      out.push_back(i);
    }
  }
  return out;
}

}  // namespace

GapStats gap_stats(std::span<const ActivityRecord> work, int64_t window_begin, int64_t window_end,
                   std::span<const Interval> waits, int64_t min_gap_ns) {
  GapStats g;
  if (window_end <= window_begin) return g;
  g.window_ns = window_end - window_begin;
  std::vector<Interval> w;
  w.reserve(work.size());
  for (const ActivityRecord& r : work) w.push_back({r.begin_ns, r.end_ns});
  const std::vector<Interval> busy = merged(std::move(w), window_begin, window_end);
  const std::vector<Interval> wait =
      merged(std::vector<Interval>(waits.begin(), waits.end()), window_begin, window_end);

  size_t next_wait = 0;
  const auto idle = [&](int64_t begin, int64_t end) {
    if (end <= begin) return;
    const int64_t len = end - begin;
    g.gap_ns += len;
    g.longest_ns = std::max(g.longest_ns, len);
    if (len >= min_gap_ns) {
      ++g.gaps;
      g.histogram.add(len);
    }
    // Waits are sorted and disjoint, as are the idle intervals: skip those that end before
    // this one, then add the overlaps (the last wait may reach into the next idle interval).
    while (next_wait < wait.size() && wait[next_wait].end_ns <= begin) ++next_wait;
    for (size_t k = next_wait; k < wait.size() && wait[k].begin_ns < end; ++k)
      g.during_wait_ns += std::min(end, wait[k].end_ns) - std::max(begin, wait[k].begin_ns);
  };
  int64_t cursor = window_begin;
  for (const Interval& b : busy) {
    idle(cursor, b.begin_ns);
    g.busy_ns += b.end_ns - b.begin_ns;
    cursor = b.end_ns;
  }
  idle(cursor, window_end);
  return g;
}

std::vector<ActivityRecord> on_stream(std::span<const ActivityRecord> records, uint32_t stream) {
  std::vector<ActivityRecord> out;
  for (const ActivityRecord& r : records)
    if (r.stream == stream) out.push_back(r);
  return out;
}

bool is_engine_work(const ActivityRecord& r) {
  return r.kind == ActivityRecord::Kind::kernel || r.kind == ActivityRecord::Kind::primitive;
}

size_t label_steps_by_markers(std::vector<ActivityRecord>& sorted, std::string_view marker,
                              std::span<const int64_t> marker_steps) {
  size_t used = 0;
  int64_t step = -1;
  bool labelling = false;
  for (ActivityRecord& r : sorted) {
    if (r.kind == ActivityRecord::Kind::kernel && r.name == marker) {
      labelling = used < marker_steps.size();
      if (labelling) step = marker_steps[used++];
    }
    if (labelling) r.step = step;
  }
  return used;
}

std::vector<DeviceStepGaps> device_step_gaps(std::span<const ActivityRecord> records,
                                             std::span<const Interval> waits, bool close_last,
                                             int64_t min_gap_ns) {
  std::vector<const ActivityRecord*> mine;
  for (const ActivityRecord& r : records)
    if (r.step >= 0) mine.push_back(&r);
  std::sort(mine.begin(), mine.end(), [](const ActivityRecord* a, const ActivityRecord* b) {
    return a->step != b->step ? a->step < b->step : a->begin_ns < b->begin_ns;
  });
  std::vector<DeviceStepGaps> out;
  std::vector<ActivityRecord> work;
  for (size_t i = 0; i < mine.size();) {
    size_t j = i;
    int64_t last_end = mine[i]->end_ns;
    while (j < mine.size() && mine[j]->step == mine[i]->step)
      last_end = std::max(last_end, mine[j++]->end_ns);
    if (j == mine.size() && !close_last) break;
    DeviceStepGaps d;
    d.step = mine[i]->step;
    d.begin_ns = mine[i]->begin_ns;
    d.end_ns = j < mine.size() ? mine[j]->begin_ns : last_end;
    work.clear();
    for (size_t k = i; k < j; ++k)
      if (is_engine_work(*mine[k])) work.push_back(*mine[k]);
    // The waits that reach into the window: sorted and disjoint, so their ends are sorted too.
    const auto first = std::partition_point(
        waits.begin(), waits.end(), [&](const Interval& w) { return w.end_ns <= d.begin_ns; });
    auto last = first;
    while (last != waits.end() && last->begin_ns < d.end_ns) ++last;
    d.stats =
        gap_stats(work, d.begin_ns, d.end_ns, std::span<const Interval>(first, last), min_gap_ns);
    out.push_back(std::move(d));
    i = j;
  }
  return out;
}

}  // namespace stoker
