// SPDX-License-Identifier: Apache-2.0
// gap_stats on hand-built intervals whose answers are worked out by hand: overlaps, unsorted
// input, clipping to the window, waits partly covering gaps, the count threshold.
#include "train/activity.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace stoker {
namespace {

ActivityRecord rec(int64_t b, int64_t e, uint32_t stream = 0) {
  ActivityRecord r;
  r.begin_ns = b;
  r.end_ns = e;
  r.stream = stream;
  return r;
}

TEST(GapStats, EmptyWorkIsOneGapTheWholeWindow) {
  const GapStats g = gap_stats({}, 100, 200);
  EXPECT_EQ(g.window_ns, 100);
  EXPECT_EQ(g.busy_ns, 0);
  EXPECT_EQ(g.gap_ns, 100);
  EXPECT_EQ(g.gaps, 1u);
  EXPECT_EQ(g.longest_ns, 100);
  EXPECT_DOUBLE_EQ(g.share(), 1.0);
}

TEST(GapStats, EmptyOrInvertedWindowIsZero) {
  const std::vector<ActivityRecord> w = {rec(0, 10)};
  const GapStats g = gap_stats(w, 50, 50);
  EXPECT_EQ(g.window_ns, 0);
  EXPECT_EQ(g.gap_ns, 0);
  EXPECT_EQ(g.gaps, 0u);
  EXPECT_DOUBLE_EQ(g.share(), 0.0);
}

TEST(GapStats, UnsortedOverlappingWorkIsMerged) {
  // Union: [10,40) [50,60) [70,100) -> busy 70; idle [0,10) [40,50) [60,70) -> 30.
  const std::vector<ActivityRecord> w = {rec(70, 100), rec(20, 40), rec(10, 30),
                                         rec(50, 60),  rec(25, 35), rec(75, 80)};
  const GapStats g = gap_stats(w, 0, 100);
  EXPECT_EQ(g.busy_ns, 70);
  EXPECT_EQ(g.gap_ns, 30);
  EXPECT_EQ(g.gaps, 3u);
  EXPECT_EQ(g.longest_ns, 10);
  EXPECT_EQ(g.histogram.count(), 3u);
  EXPECT_EQ(g.histogram.sum_ns(), 30);
  EXPECT_DOUBLE_EQ(g.share(), 0.3);
}

TEST(GapStats, TouchingIntervalsLeaveNoGap) {
  const std::vector<ActivityRecord> w = {rec(0, 10), rec(10, 20), rec(20, 30)};
  const GapStats g = gap_stats(w, 0, 30);
  EXPECT_EQ(g.busy_ns, 30);
  EXPECT_EQ(g.gap_ns, 0);
  EXPECT_EQ(g.gaps, 0u);
  EXPECT_EQ(g.longest_ns, 0);
}

TEST(GapStats, WorkIsClippedToTheWindow) {
  // [0,30) clipped to [20,30); [90,150) to [90,100); [200,300) outside.
  const std::vector<ActivityRecord> w = {rec(0, 30), rec(90, 150), rec(200, 300), rec(-50, -10)};
  const GapStats g = gap_stats(w, 20, 100);
  EXPECT_EQ(g.window_ns, 80);
  EXPECT_EQ(g.busy_ns, 20);
  EXPECT_EQ(g.gap_ns, 60);  // [30,90)
  EXPECT_EQ(g.gaps, 1u);
  EXPECT_EQ(g.longest_ns, 60);
}

TEST(GapStats, ThresholdDropsShortGapsFromCountButNotFromTotal) {
  // Idle: [10,12) 2, [20,21) 1, [30,50) 20, [60,100) 40.
  const std::vector<ActivityRecord> w = {rec(0, 10), rec(12, 20), rec(21, 30), rec(50, 60)};
  const GapStats g = gap_stats(w, 0, 100, {}, 5);
  EXPECT_EQ(g.gap_ns, 63);
  EXPECT_EQ(g.busy_ns, 37);
  EXPECT_EQ(g.gaps, 2u);
  EXPECT_EQ(g.histogram.count(), 2u);
  EXPECT_EQ(g.histogram.sum_ns(), 60);
  EXPECT_EQ(g.longest_ns, 40);
  // Without a threshold every idle interval counts.
  EXPECT_EQ(gap_stats(w, 0, 100).gaps, 4u);
}

TEST(GapStats, WaitsCountOnlyWhereTheyOverlapIdleTime) {
  // Busy [0,10) [40,50) [80,100); idle [10,40) [50,80).
  const std::vector<ActivityRecord> w = {rec(40, 50), rec(0, 10), rec(80, 100)};
  // Waits (unsorted, overlapping each other, one across a busy interval, one busy-only):
  //   [5,20)  -> idle part [10,20)      10
  //   [15,25) -> merged with the above: [5,25) -> [10,25) 15 in all
  //   [35,60) -> [35,40) + [50,60)      15
  //   [85,95) -> busy only               0
  //   [70,200)-> [70,80), clipped        10
  const std::vector<Interval> waits = {{35, 60}, {15, 25}, {85, 95}, {5, 20}, {70, 200}};
  const GapStats g = gap_stats(w, 0, 100, waits);
  EXPECT_EQ(g.gap_ns, 60);
  EXPECT_EQ(g.during_wait_ns, 15 + 15 + 10);
  EXPECT_LE(g.during_wait_ns, g.gap_ns);
}

TEST(GapStats, OneWaitSpanningSeveralGaps) {
  const std::vector<ActivityRecord> w = {rec(10, 20), rec(30, 40), rec(50, 60)};
  const std::vector<Interval> waits = {{0, 100}};
  const GapStats g = gap_stats(w, 0, 100, waits);
  EXPECT_EQ(g.gap_ns, 70);
  EXPECT_EQ(g.during_wait_ns, 70);
  EXPECT_EQ(g.gaps, 4u);
  EXPECT_EQ(g.longest_ns, 40);
}

TEST(GapStats, BusyPlusGapIsTheWindow) {
  std::vector<ActivityRecord> w;
  for (int k = 0; k < 1000; ++k) w.push_back(rec(k * 1000 + (k % 7) * 13, k * 1000 + 900));
  const GapStats g = gap_stats(w, 0, 1'000'000, {}, 50);
  EXPECT_EQ(g.busy_ns + g.gap_ns, g.window_ns);
  EXPECT_GT(g.gap_ns, 0);
  EXPECT_LE(g.histogram.sum_ns(), g.gap_ns);
  EXPECT_EQ(g.longest_ns, 100 + 6 * 13);
}

TEST(OnStream, KeepsOneStreamInOrder) {
  const std::vector<ActivityRecord> w = {rec(0, 1, 7), rec(2, 3, 8), rec(4, 5, 7)};
  const std::vector<ActivityRecord> s = on_stream(w, 7);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].begin_ns, 0);
  EXPECT_EQ(s[1].begin_ns, 4);
  EXPECT_TRUE(on_stream(w, 9).empty());
}

// Device records of step `step` starting at `b` on stream 1: a marker [b, b+1) and kernels
// [b+1, b+80), [b+85, b+95): busy 90 ns of each 100, idle [b+80, b+85) and [b+95, next).
void device_step(std::vector<ActivityRecord>& out, int64_t step, int64_t b) {
  for (const auto& [lo, hi] : {std::pair{0, 1}, {1, 80}, {85, 95}}) {
    ActivityRecord r = rec(b + lo, b + hi, 1);
    r.step = step;
    out.push_back(r);
  }
}

// The host issues step k in [100k, 100k + 100) after a 10 ns data wait; the device runs each
// step one step later, in [100(k+1), 100(k+2)), while copies (stream 2) fill its gaps.
TEST(DeviceStepGaps, ADeviceOneStepBehindIsWindowedByItsOwnRecords) {
  std::vector<ActivityRecord> a;
  std::vector<Interval> waits;
  for (int64_t k = 0; k < 4; ++k) {
    device_step(a, k, 100 * (k + 1));
    ActivityRecord copy = rec(100 * (k + 1) + 80, 100 * (k + 1) + 100, 2);
    copy.kind = ActivityRecord::Kind::memcpy;
    copy.step = k;
    a.push_back(copy);
    waits.push_back({100 * k, 100 * k + 10});
  }
  a.push_back(rec(0, 50, 1));  // unlabelled (before the first marker): not any step's
  std::reverse(a.begin(), a.end());

  const std::vector<DeviceStepGaps> open = device_step_gaps(a, waits, false);
  ASSERT_EQ(open.size(), 3u);  // the last step waits for its successor's first record
  for (int64_t k = 0; k < 3; ++k) {
    const DeviceStepGaps& d = open[size_t(k)];
    EXPECT_EQ(d.step, k);
    EXPECT_EQ(d.begin_ns, 100 * (k + 1));
    EXPECT_EQ(d.end_ns, 100 * (k + 2));
    EXPECT_EQ(d.stats.window_ns, 100);
    EXPECT_EQ(d.stats.busy_ns, 90);
    EXPECT_EQ(d.stats.gap_ns, 10);  // copies (stream 2) are not kernels: no busy time
    EXPECT_EQ(d.stats.gaps, 2u);
    EXPECT_EQ(d.stats.longest_ns, 5);
    // Host waits fall at [100(k+1), 100(k+1) + 10), where the device is busy.
    EXPECT_EQ(d.stats.during_wait_ns, 0);
  }
  const std::vector<DeviceStepGaps> closed = device_step_gaps(a, waits, true);
  ASSERT_EQ(closed.size(), 4u);
  EXPECT_EQ(closed[3].begin_ns, 400);
  EXPECT_EQ(closed[3].end_ns, 500);  // no successor: up to its last record's end (the copy)
  EXPECT_EQ(closed[3].stats.gap_ns, 10);

  // What the host's windows would have said: step 0's window holds no labelled work.
  const GapStats host = gap_stats(on_stream(a, 1), 0, 100);
  EXPECT_GT(host.gap_ns, 10);
}

// The host waits for data in [90, 300) before issuing step 1; the device finishes step 0 at
// 95 and starts step 1 at 310: the idle [95, 310) is step 0's, 205 ns of it during the wait.
TEST(DeviceStepGaps, IdleWhileTheHostWaitsIsCountedAndAttributedToTheWait) {
  std::vector<ActivityRecord> a;
  device_step(a, 0, 0);
  device_step(a, 1, 310);
  const std::vector<Interval> waits = {{0, 5}, {90, 300}, {400, 420}};
  const std::vector<DeviceStepGaps> d = device_step_gaps(a, waits, true, 10);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].begin_ns, 0);
  EXPECT_EQ(d[0].end_ns, 310);
  EXPECT_EQ(d[0].stats.busy_ns, 90);
  EXPECT_EQ(d[0].stats.gap_ns, 220);  // [80, 85) and [95, 310)
  EXPECT_EQ(d[0].stats.gaps, 1u);     // the 5 ns boundary is under the threshold
  EXPECT_EQ(d[0].stats.longest_ns, 215);
  EXPECT_EQ(d[0].stats.during_wait_ns, 205);  // [95, 300); the wait [0, 5) met busy time
  EXPECT_NEAR(d[0].stats.share(), 220.0 / 310.0, 1e-12);
  EXPECT_EQ(d[1].begin_ns, 310);
  EXPECT_EQ(d[1].end_ns, 405);
  EXPECT_EQ(d[1].stats.gap_ns, 5);
  EXPECT_EQ(d[1].stats.during_wait_ns, 0);  // [400, 420) lies after its last kernel
}

// Under a CUDA Graph CUPTI names the graph's kernels on streams of their own (the H200 run of
// 2026-11-26: 606 of 778 kernels on "other" streams): they are the step's work all the same,
// and records are labelled by time between markers, whatever their stream.
TEST(DeviceStepGaps, KernelsOnEveryStreamAreBusyAndLabelledByTime) {
  const auto kernel = [](std::string name, int64_t b, int64_t e, uint32_t stream) {
    ActivityRecord r = rec(b, e, stream);
    r.name = std::move(name);
    return r;
  };
  std::vector<ActivityRecord> a = {
      kernel("early", 0, 5, 1),         kernel("marker", 10, 11, 1),
      kernel("convert", 11, 20, 1),     kernel("graph conv", 20, 60, 3),
      kernel("graph bn", 62, 90, 3),    kernel("marker", 100, 101, 1),
      kernel("graph conv", 101, 180, 3)};
  ActivityRecord set = rec(90, 95, 1);
  set.kind = ActivityRecord::Kind::memset;
  a.insert(a.begin() + 5, set);
  const std::vector<int64_t> marks = {4, 5};
  EXPECT_EQ(label_steps_by_markers(a, "marker", marks), 2u);
  const std::vector<int64_t> steps = {-1, 4, 4, 4, 4, 4, 5, 5};
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].step, steps[i]) << a[i].name;

  const std::vector<DeviceStepGaps> d = device_step_gaps(a, {}, true);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].begin_ns, 10);
  EXPECT_EQ(d[0].end_ns, 100);
  EXPECT_EQ(d[0].stats.busy_ns, 1 + 9 + 40 + 28);  // the memset [90, 95) is not a kernel
  EXPECT_EQ(d[0].stats.gap_ns, 2 + 10);            // [60, 62) and [90, 100)
  EXPECT_EQ(d[1].begin_ns, 100);
  EXPECT_EQ(d[1].end_ns, 180);
  EXPECT_EQ(d[1].stats.gap_ns, 0);
}

TEST(DeviceStepGaps, NoLabelledRecordsNoSteps) {
  const std::vector<ActivityRecord> a = {rec(0, 10, 1), rec(20, 30, 1)};
  EXPECT_TRUE(device_step_gaps(a, {}, true).empty());
}

}  // namespace
}  // namespace stoker
