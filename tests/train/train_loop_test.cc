// SPDX-License-Identifier: Apache-2.0
// The training loop on the CPU backend with synthetic batches: every step collected with its
// loss, the per-step gap arithmetic consistent with the step's wall time, and the trace of a
// window of steps: valid Chrome trace-event JSON (parsed with nlohmann), the expected tracks
// and events, timestamps monotonic per track.
#include "train/train_loop.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "models/resnet.h"
#include "train/loop_trace.h"

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
    GTEST_SKIP() << "no CPU backend in this build";
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
  c.timing_warmup = 1;
  c.activity = true;
  c.trace_begin = 11;
  c.trace_end = 13;
  const LoopResult r = train_loop(*backend, feed, c);

  ASSERT_EQ(r.records.size(), 5u);
  GapStats merged;
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
    EXPECT_LT(s.gap - s.gap_during_wait, 0.2 * s.total) << "framework overhead between primitives";
    EXPECT_GT(s.gaps, 0u);
  }
  EXPECT_EQ(r.gaps.gaps, r.records[1].gaps + r.records[2].gaps + r.records[3].gaps +
                             r.records[4].gaps);  // steps from timing_warmup on
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
