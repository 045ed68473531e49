// SPDX-License-Identifier: Apache-2.0
// The training loop on the CPU backend with synthetic batches: every step collected with its
// loss, the per-step gap arithmetic consistent with the step's wall time, and the trace of a
// window of steps: valid Chrome trace-event JSON (parsed with nlohmann), the expected tracks
// and events, timestamps monotonic per track. And a virtual asynchronous device, to check
// the device windows against its own timeline (the host runs ahead; starved steps idle).
#include "train/train_loop.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "common/clock.h"
#include "models/resnet.h"
#include "test_util.h"
#include "train/loop_trace.h"
#include "train/step_summary.h"

namespace stoker {
namespace {

// A feed that sleeps, so that the loop's data wait is visible in the gaps.
class SlowFeed final : public BatchFeed {
 public:
  explicit SlowFeed(SyntheticFeed& inner) : inner_(inner) {}
  HostBatch next() override {
    const int64_t until = now_ns() + 2'000'000;
    while (now_ns() < until) {
    }
    return inner_.next();
  }

 private:
  SyntheticFeed& inner_;
};

TEST(TrainLoop, CollectsEveryStepAndGapsAddUpAndTraces) {
  const auto names = built_backends();
  if (std::find(names.begin(), names.end(), "cpu") == names.end())
    STOKER_SKIP_IF_OPTIONAL(
        "no CPU backend in this build (oneDNN 3; scripts/deps.sh fetches PyPI's onednn-cpu-gomp)");
  ResNetConfig rc;
  rc.depth = 18;
  rc.num_classes = 4;
  const Network net = build_resnet(rc);
  BackendConfig bc;
  bc.batch = 2;
  bc.height = bc.width = 32;
  bc.record_activity = true;
  std::unique_ptr<Backend> backend = make_backend("cpu", net, bc);
  backend->load(init_checkpoint(net, 1), "init");
  SyntheticFeed synthetic(2, 32, 32, 4, 9);
  SlowFeed feed(synthetic);
  LoopConfig c;
  c.steps = 5;
  c.first_step = 10;
  c.schedule.base_lr = 0.01;
  c.schedule.total_steps = 20;
  c.images_per_step = 2;
  c.progress = false;
  c.warmup = 1;
  c.activity = true;
  c.trace_begin = 11;
  c.trace_end = 13;
  const LoopResult r = train_loop(*backend, feed, c);

  ASSERT_EQ(r.records.size(), 5u);
  GapStats merged;
  double outside_wait = 0, total = 0;
  for (const StepRecord& s : r.records) {
    EXPECT_GT(s.loss, 0);
    EXPECT_GT(s.forward, 0);
    EXPECT_GT(s.update, 0);
    EXPECT_GE(s.wait, 2e-3);
    // busy + gaps is the window (wait, stage, forward, backward, update) by construction;
    // the wait is idle time for the engine, and the rest of the idle time is small.
    EXPECT_NEAR(s.busy + s.gap, s.total, 0.02 * s.total);
    EXPECT_GE(s.gap, 0);
    EXPECT_GE(s.gap_during_wait, 0.99 * s.wait);
    EXPECT_LE(s.gap_during_wait, s.gap + 1e-9);
    EXPECT_GT(s.gaps, 0u);
    outside_wait += s.gap - s.gap_during_wait;
    total += s.total;
  }
  // Idle time outside the waits is framework overhead between primitives, plus whatever a
  // busy machine's scheduler takes there: bounded over the run, not per step, so that one
  // preemption in one step of a loaded CI box does not fail it.
  EXPECT_LT(outside_wait, 0.2 * total) << "framework overhead between primitives";
  EXPECT_EQ(r.gaps.gaps, r.records[1].gaps + r.records[2].gaps + r.records[3].gaps +
                             r.records[4].gaps);  // steps from warmup on
  EXPECT_GT(r.gaps.busy_ns, 0);

  ASSERT_EQ(r.trace.steps.size(), 2u);
  EXPECT_EQ(r.trace.numbers, (std::vector<int64_t>{11, 12}));
  ASSERT_FALSE(r.trace.activity.empty());
  for (const ActivityRecord& a : r.trace.activity) {
    EXPECT_GT(a.end_ns, r.trace.steps.front().begin_ns);
    EXPECT_LT(a.begin_ns, r.trace.steps.back().end_ns);
  }
  const nlohmann::json t = nlohmann::json::parse(loop_trace(r.trace, "cpu").json());
  ASSERT_TRUE(t.is_array());
  std::map<std::pair<int, int64_t>, std::string> tracks;
  for (const auto& e : t)
    if (e["ph"] == "M" && e["name"] == "thread_name")
      tracks[{e["pid"].get<int>(), e["tid"].get<int64_t>()}] = e["args"]["name"];
  ASSERT_EQ(tracks.size(), 2u);  // synthetic data: no loader tracks
  EXPECT_EQ((tracks[{1, kLoopTrack}]), "training loop");
  EXPECT_EQ((tracks[{1, kStreamTrackBase}]), "cpu stream 0");
  std::map<std::pair<int, int64_t>, double> last;
  std::vector<std::string> loop_events;
  size_t primitives = 0;
  for (const auto& e : t) {
    if (e["ph"] != "X") continue;
    const std::pair<int, int64_t> key{e["pid"].get<int>(), e["tid"].get<int64_t>()};
    ASSERT_TRUE(tracks.contains(key)) << e.dump();
    const double ts = e["ts"].get<double>();
    EXPECT_GE(ts, last.contains(key) ? last[key] : 0.0) << e.dump();
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    last[key] = ts;
    if (key.second == kLoopTrack) loop_events.push_back(e["name"]);
    primitives += key.second == kStreamTrackBase;
  }
  EXPECT_EQ(loop_events,
            (std::vector<std::string>{"wait 11", "stage 11", "forward+backward 11", "update 11",
                                      "wait 12", "stage 12", "forward+backward 12", "update 12"}));
  EXPECT_EQ(primitives, r.trace.activity.size());
}

// Per step, wait + stage + compute + gaps = wall within 2% on the CPU backend: the wait and
// the gaps from the primitives' records (idle time inside the host's window), stage and
// compute from the backend's own clock around its work; u8 input, so that the stage is the
// backend's conversion. Without records the gaps are what is left, and the sum is exact.
TEST(TrainLoop, StepAccountsAddUpOnTheCpu) {
  const auto names = built_backends();
  if (std::find(names.begin(), names.end(), "cpu") == names.end())
    STOKER_SKIP_IF_OPTIONAL(
        "no CPU backend in this build (oneDNN 3; scripts/deps.sh fetches PyPI's onednn-cpu-gomp)");
  ResNetConfig rc;
  rc.depth = 18;
  rc.num_classes = 4;
  const Network net = build_resnet(rc);
  for (const bool activity : {true, false}) {
    BackendConfig bc;
    bc.batch = 2;
    bc.height = bc.width = 32;
    bc.input.dtype = DType::u8;
    bc.record_activity = activity;
    std::unique_ptr<Backend> backend = make_backend("cpu", net, bc);
    backend->load(init_checkpoint(net, 1), "init");
    SyntheticFeed synthetic(2, 32, 32, 4, 9, DType::u8);
    SlowFeed feed(synthetic);
    LoopConfig c;
    c.steps = 6;
    c.schedule.base_lr = 0.01;
    c.schedule.total_steps = 6;
    c.images_per_step = 2;
    c.progress = false;
    c.warmup = 1;
    c.activity = activity;
    const LoopResult r = train_loop(*backend, feed, c);
    EXPECT_FALSE(r.asynchronous);
    const StepSummary s = summarise_steps(r.records, 1, r.asynchronous, activity);
    ASSERT_EQ(s.account.size(), 5u);
    for (size_t k = 0; k < s.account.size(); ++k) {
      const StepAccount& a = s.account[k];
      const StepRecord& rec = r.records[k + 1];
      EXPECT_EQ(a.measured, activity);
      EXPECT_NEAR(a.wall, rec.total, 1e-9) << k;  // the host's window is the engine's
      EXPECT_GT(a.stage, 0) << k;
      EXPECT_GE(a.wait, 0.99 * rec.wait) << k;  // SlowFeed's 2 ms, idle for the engine
      EXPECT_GT(a.compute, 0) << k;
      EXPECT_GE(a.gaps, 0) << k;
      EXPECT_TRUE(a.balanced()) << "step " << k << ": wall " << a.wall << " = wait " << a.wait
                                << " + stage " << a.stage << " + compute " << a.compute
                                << " + gaps " << a.gaps << " + residual " << a.residual();
    }
    EXPECT_EQ(s.unbalanced, 0u);
    EXPECT_NEAR(s.wall, s.host_wall, 1e-9);
  }
}

// A device on a virtual timeline: step k starts when it is issued (forward_backward) or when
// step k-1 ends, whichever is later, and is busy kBusy ns (a marker, then a kernel on the
// compute stream and one on a stream of its own, as a CUDA Graph's are); a copy on stream 2
// overlaps it and is no busy time. Labels count from 7 (as if 7 steps ran before this loop),
// and the first take also returns a step of a previous run (label 6, before the loop).
// The host may run two steps ahead of it; collect() waits, on the host clock, for the
// virtual device to finish.
class VirtualDevice final : public Backend, public BackendDiagnostics {
 public:
  static constexpr int64_t kBusy = 200'000;
  static constexpr int64_t kFirstLabel = 7;
  // Batches of one 1 x 1 image of 2 classes; a network of no layers.
  VirtualDevice()
      : Backend({.device = true, .asynchronous = true, .activity_records = true},
                Network{.name = "virtual", .num_classes = 2, .tensors = {"input"}},
                {.batch = 1, .height = 1, .width = 1}, "virtual device") {}
  std::string describe() const override { return "virtual device"; }
  HostMemory host_memory() const override { return {}; }
  void load(const Checkpoint&, std::string_view) override {}
  Checkpoint save() const override { return {}; }
  Checkpoint gradients() const override { return {}; }
  void stage_impl(const HostBatch&) override {}
  void release_input() override {}
  void reshape_impl(int64_t, int64_t) override {}
  void forward_backward() override {
    // The host runs at most two steps ahead (as a launch queue or a staging ring bounds it).
    while (device_free_ - now_ns() > 2 * kBusy) {
    }
    const int64_t begin = std::max(now_ns(), device_free_);
    starts.push_back(begin);
    device_free_ = begin + kBusy;
    const int64_t label = kFirstLabel + int64_t(starts.size()) - 1;
    const auto add = [&](int64_t b, int64_t e, uint32_t stream, int64_t step,
                         ActivityRecord::Kind kind = ActivityRecord::Kind::kernel) {
      ActivityRecord r;
      r.begin_ns = b, r.end_ns = e, r.stream = stream, r.step = step, r.kind = kind;
      pending_.push_back(r);
    };
    if (starts.size() == 1) add(begin - 3 * kBusy, begin - 2 * kBusy, 1, kFirstLabel - 1);
    add(begin, begin + 1000, 1, label);
    add(begin + 1000, begin + kBusy / 2, 1, label);
    add(begin + kBusy / 2, begin + kBusy, 3, label);  // as a CUDA Graph's, on a stream of its own
    add(begin + 1000, begin + 50'000, 2, label, ActivityRecord::Kind::memcpy);
  }
  void update(const SgdConfig&, float) override {}
  std::vector<StepResult> collect() override {
    while (now_ns() < device_free_) {
    }
    ++collects;
    std::vector<StepResult> out(starts.size() - collected_, StepResult{1.0f, {}, false});
    collected_ = starts.size();
    return out;
  }
  void forward_eval() override {}
  std::span<const float> logits() override { return {}; }
  BackendDiagnostics& diagnostics() override { return *this; }
  std::vector<ActivityRecord> take_activity() override { return std::exchange(pending_, {}); }
  std::vector<ConvChoice> algorithms() const override { return {}; }

  std::vector<int64_t> starts;  // virtual start of each step, host steady clock
  int collects = 0;

 private:
  int64_t device_free_ = 0;
  size_t collected_ = 0;
  std::vector<ActivityRecord> pending_;
};

// Every 40th batch takes 1 ms to arrive; the others none.
class StarvingFeed final : public BatchFeed {
 public:
  HostBatch next() override {
    if (calls_++ % 40 == 39) {
      const int64_t until = now_ns() + 1'000'000;
      while (now_ns() < until) {
      }
    }
    return {nullptr, &label_, 1};
  }

 private:
  int64_t calls_ = 0;
  const int32_t label_ = 0;
};

TEST(TrainLoop, DeviceStepsAreWindowedByTheDevicesOwnRecords) {
  VirtualDevice device;
  StarvingFeed feed;
  LoopConfig c;
  c.steps = 300;  // more than Backend::kMaxPendingSteps: two collects, one window across
  c.first_step = 100;
  c.schedule.base_lr = 0.01;
  c.schedule.total_steps = 1000;
  c.images_per_step = 1;
  c.progress = false;
  c.warmup = 2;
  c.activity = true;
  c.trace_begin = 350;
  c.trace_end = 360;
  const LoopResult r = train_loop(device, feed, c);
  ASSERT_EQ(r.records.size(), 300u);
  ASSERT_EQ(device.starts.size(), 300u);
  EXPECT_EQ(device.collects, 2);

  // The truth from the virtual timeline: step k's window is [start k, start k+1) (the last:
  // [start, start + busy)); its idle part [start k + busy, start k+1) is compared with the
  // loop's waits, whichever step they belong to.
  int64_t window = 0, busy = 0, gap = 0, during = 0, longest = 0;
  uint64_t gaps = 0;
  int starved_steps = 0;
  for (size_t k = 0; k < 300; ++k) {
    const int64_t b = device.starts[k];
    const int64_t e = k + 1 < 300 ? device.starts[k + 1] : b + VirtualDevice::kBusy;
    const int64_t idle = e - b - VirtualDevice::kBusy;
    int64_t in_wait = 0;
    for (const StepRecord& w : r.records)
      in_wait += std::max<int64_t>(
          0, std::min(e, w.wait_end_ns) - std::max(b + VirtualDevice::kBusy, w.begin_ns));
    const StepRecord& s = r.records[k];
    EXPECT_NEAR(s.busy, 1e-9 * double(VirtualDevice::kBusy), 1e-12) << k;
    EXPECT_NEAR(s.gap, 1e-9 * double(idle), 1e-12) << k;
    EXPECT_NEAR(s.gap_during_wait, 1e-9 * double(in_wait), 1e-12) << k;
    EXPECT_EQ(s.gaps, idle > 0 ? 1u : 0u) << k;
    starved_steps += in_wait > 0;
    if (k < 2) continue;
    window += e - b, busy += VirtualDevice::kBusy, gap += idle, during += in_wait;
    longest = std::max(longest, idle);
    gaps += idle > 0;
  }
  // The host issues steps far faster than the device runs them, except after a slow batch:
  // there the device drains and idles while the loop waits.
  EXPECT_GE(starved_steps, 5);
  EXPECT_EQ(r.gaps.window_ns, window);
  EXPECT_EQ(r.gaps.busy_ns, busy);
  EXPECT_EQ(r.gaps.gap_ns, gap);
  EXPECT_EQ(r.gaps.during_wait_ns, during);
  EXPECT_EQ(r.gaps.longest_ns, longest);
  EXPECT_EQ(r.gaps.gaps, gaps);
  EXPECT_GT(r.gaps.during_wait_ns, 0);

  // The trace keeps the device's records of steps 350..359 by their label, on every stream,
  // renamed to global steps; the previous run's record is in no step.
  EXPECT_EQ(r.trace.numbers.size(), 10u);
  ASSERT_EQ(r.trace.activity.size(), 40u);
  for (const ActivityRecord& a : r.trace.activity) {
    EXPECT_GE(a.step, 350);
    EXPECT_LT(a.step, 360);
  }
  EXPECT_EQ(r.trace.steps[3].gap, r.records[253].gap);  // filled after the window closed
}

TEST(TraceWriter, SortsEachTrackAndWritesMicroseconds) {
  TraceWriter w;
  w.process(1, "p");
  w.track(1, 5, "five");
  w.event(1, 5, "late", 3000, 4000);
  w.event(1, 5, "early", 1000, 2500);
  const nlohmann::json t = nlohmann::json::parse(w.json());
  std::vector<nlohmann::json> x;
  for (const auto& e : t)
    if (e["ph"] == "X") x.push_back(e);
  ASSERT_EQ(x.size(), 2u);
  EXPECT_EQ(x[0]["name"], "early");
  EXPECT_DOUBLE_EQ(x[0]["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(x[0]["dur"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(x[1]["ts"].get<double>(), 2.0);
}

}  // namespace
}  // namespace stoker
