// SPDX-License-Identifier: Apache-2.0
#include "train/train_loop.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "common/clock.h"
#include "common/error.h"
#include "common/interrupt.h"
#include "common/rng.h"
#include "models/normal.h"

namespace stoker {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string duration_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const auto total = int64_t(s + 0.5);
  if (total >= 3600) return fmt::format("{}h{:02}m", total / 3600, total / 60 % 60);
  if (total >= 60) return fmt::format("{}m{:02}s", total / 60, total % 60);
  return fmt::format("{}s", total);
}

// One line, redrawn in place on a terminal; elsewhere (logs, CI) a line every 10 s.
class LiveLine {
 public:
  explicit LiveLine(bool enabled) : enabled_(enabled), tty_(isatty(STDERR_FILENO) != 0) {}
  // Whether to draw now; the caller formats the text only then.
  bool due(bool last) const {
    if (!enabled_) return false;
    const double gap = std::chrono::duration<double>(Clock::now() - last_draw_).count();
    return last || gap >= (tty_ ? 0.25 : 10.0);
  }
  void draw(const std::string& text, bool last) {
    last_draw_ = Clock::now();
    std::fprintf(stderr, tty_ ? "\r\033[K%s%s" : "%s%s", text.c_str(), tty_ && !last ? "" : "\n");
    std::fflush(stderr);
  }
  // Erases a line drawn in place, before other output.
  void clear() {
    if (enabled_ && tty_) std::fputs("\r\033[K", stderr);
  }

 private:
  bool enabled_, tty_;
  Clock::time_point last_draw_{};
};

void merge(GapStats& into, const GapStats& g) {
  into.window_ns += g.window_ns;
  into.busy_ns += g.busy_ns;
  into.gap_ns += g.gap_ns;
  into.gaps += g.gaps;
  into.longest_ns = std::max(into.longest_ns, g.longest_ns);
  into.during_wait_ns += g.during_wait_ns;
  into.histogram.merge(g.histogram);
}

}  // namespace

SyntheticFeed::SyntheticFeed(int64_t batch, int64_t height, int64_t width, int classes,
                             uint64_t seed, InputType type, const HostMemory& memory)
    : memory_(memory), labels_(size_t(batch)) {
  Rng rng(seed);
  const size_t n = size_t(batch * 3 * height * width);
  const size_t bytes = n * (type == InputType::u8 ? 1 : sizeof(float));
  images_ = memory_.allocate ? memory_.allocate(bytes) : ::operator new(bytes);
  if (type == InputType::u8) {
    auto* b = static_cast<uint8_t*>(images_);
    for (size_t i = 0; i < n; ++i) b[i] = uint8_t(rng.next() >> 56);
  } else {
    fill_normal(rng, 1.0, std::span<float>(static_cast<float*>(images_), n));
  }
  for (int32_t& y : labels_) y = int32_t(rng.next() % uint64_t(classes));
}

SyntheticFeed::~SyntheticFeed() {
  if (memory_.release)
    memory_.release(images_);
  else
    ::operator delete(images_);
}

LoopResult train_loop(Backend& backend, BatchFeed& feed, const LoopConfig& c) {
  LoopResult out;
  std::vector<StepRecord>& records = out.records;
  records.reserve(size_t(c.steps));
  LiveLine line(c.progress);
  const auto start = Clock::now();
  double window_wait = 0, window_total = 0;
  size_t collected = 0;  // records[0, collected) have their loss and backend times
  float last_loss = 0;
  const auto in_trace = [&](int64_t step) { return step >= c.trace_begin && step < c.trace_end; };

  const ActivityTimeline timeline = backend.activity_timeline();
  std::vector<Interval> waits;  // the host's data waits, in order (device windows only)
  std::vector<ActivityRecord> device_pending;  // compute records of steps not yet windowed
  int64_t windowed = -1;                       // the last step whose device window is closed
  int64_t label_offset = 0;                    // backend step label - index of the step in this run

  const auto fill_gaps = [&](size_t index, const GapStats& g) {
    StepRecord& r = records[index];
    r.busy = 1e-9 * double(g.busy_ns);
    r.gap = 1e-9 * double(g.gap_ns);
    r.gap_during_wait = 1e-9 * double(g.during_wait_ns);
    r.longest_gap = 1e-9 * double(g.longest_ns);
    r.gaps = g.gaps;
    if (int64_t(index) >= c.timing_warmup) merge(out.gaps, g);
  };

  // A device's records: labels to step indices of this run (the last label is the last step
  // begun; records of steps before this run get -1), then each step windowed by its own
  // compute-stream records; a step's window closes with the next step's first record, so the
  // newest step waits for the next collect unless this is the last.
  const auto device_gaps = [&](std::vector<ActivityRecord>& activity, bool final) {
    int64_t newest = -1;
    for (const ActivityRecord& a : activity) newest = std::max(newest, a.step);
    if (newest >= 0) label_offset = newest - (int64_t(records.size()) - 1);
    for (ActivityRecord& a : activity) {
      if (a.step < 0) continue;
      a.step -= label_offset;
      if (a.step < 0) a.step = -1;
      // A straggler of a step already windowed would count twice: left out.
      if (a.step > windowed && a.stream == timeline.compute_stream) device_pending.push_back(a);
    }
    const std::vector<DeviceStepGaps> steps =
        device_step_gaps(device_pending, timeline.compute_stream, waits, final);
    for (const DeviceStepGaps& d : steps) {
      STOKER_CHECK(d.step < int64_t(records.size()));
      fill_gaps(size_t(d.step), d.stats);
    }
    if (!steps.empty()) {
      windowed = steps.back().step;
      std::erase_if(device_pending, [&](const ActivityRecord& a) { return a.step <= windowed; });
    }
  };

  // Fills the steps finished since the last collect; with activity, their gap figures.
  const auto collect = [&](bool final) {
    const std::vector<StepResult> results = backend.collect();
    STOKER_CHECK_MSG(collected + results.size() == records.size(),
                     "the backend returned {} results for {} uncollected steps", results.size(),
                     records.size() - collected);
    std::vector<ActivityRecord> activity;
    if (c.activity) activity = backend.take_activity();
    if (c.activity && timeline.asynchronous) device_gaps(activity, final);
    for (const StepResult& res : results) {
      StepRecord& r = records[collected];
      const int64_t step = c.first_step + int64_t(collected);
      if (!std::isfinite(res.loss))
        fail("{}: the loss is {} at step {}: the run diverged (hint: a lower --lr or a warm-up)",
             c.label, res.loss, step);
      r.loss = last_loss = res.loss;
      r.skipped = res.skipped;
      r.backend_stage = res.times.stage;
      r.forward = res.times.forward;
      r.backward = res.times.backward;
      r.update = res.times.update;
      r.allreduce_wait = res.times.allreduce_wait;
      if (c.activity && !timeline.asynchronous) {
        // The engine works inside the loop's calls: the host's window bounds it.
        const Interval wait{r.begin_ns, r.wait_end_ns};
        fill_gaps(collected,
                  gap_stats(activity, r.begin_ns, r.end_ns, std::span<const Interval>(&wait, 1)));
      }
      ++collected;
    }
    if (c.trace_end <= c.trace_begin) return;
    // Trace records: a device's by their step label, the rest by the host's trace window.
    const int64_t lo = std::max(c.trace_begin, c.first_step) - c.first_step;
    const int64_t hi = std::min(c.trace_end, c.first_step + c.steps) - c.first_step;
    if (hi <= lo || lo >= int64_t(records.size())) return;
    const int64_t host_begin = records[size_t(lo)].begin_ns;
    const int64_t host_end =
        records[size_t(std::min<int64_t>(hi, int64_t(records.size())) - 1)].end_ns;
    for (ActivityRecord& a : activity) {
      const bool by_step = timeline.asynchronous && a.step >= 0;
      const bool keep =
          by_step ? a.step >= lo && a.step < hi : a.end_ns > host_begin && a.begin_ns < host_end;
      if (!keep) continue;
      if (by_step) a.step += c.first_step;  // the global step, as the trace names steps
      out.trace.activity.push_back(std::move(a));
    }
  };

  for (int64_t k = 0; k < c.steps && !out.interrupted; ++k) {
    const int64_t step = c.first_step + k;
    StepRecord r;
    r.begin_ns = now_ns();
    const HostBatch batch = feed.next();
    r.wait_end_ns = now_ns();
    if (in_trace(step)) {
      const std::span<const SampleTiming> t = feed.timings();
      out.trace.samples.emplace_back(t.begin(), t.end());
    }
    r.height = batch.height;
    r.width = batch.width;
    // A no-op at the backend's current size; a re-plan when a size schedule or a validation
    // at its own size (a hook between steps) changed it.
    if (batch.height > 0) {
      backend.reshape(batch.height, batch.width);
      r.reshape = 1e-9 * double(now_ns() - r.wait_end_ns);
    }
    backend.stage(batch);
    r.stage_end_ns = now_ns();
    backend.forward_backward();
    r.fb_end_ns = now_ns();
    r.lr = lr_at(c.schedule, size_t(step));
    backend.update(c.sgd, float(r.lr));
    r.end_ns = now_ns();
    r.wait = 1e-9 * double(r.wait_end_ns - r.begin_ns);
    r.stage = 1e-9 * double(r.stage_end_ns - r.wait_end_ns) - r.reshape;
    r.total = 1e-9 * double(r.end_ns - r.begin_ns);
    records.push_back(r);
    if (timeline.asynchronous) waits.push_back({r.begin_ns, r.wait_end_ns});

    window_wait += r.wait;
    window_total += r.total;
    // An interrupt ends the run here, after a whole step, as if it were the last one.
    if (k + 1 < c.steps)
      out.interrupted = c.agree_stop ? c.agree_stop(interrupted()) : interrupted();
    const bool last = k + 1 == c.steps || out.interrupted;
    const bool hook = c.hook_every > 0 && c.hook && (step + 1) % c.hook_every == 0;
    const bool draw = line.due(last);
    if (draw || last || hook || int64_t(records.size() - collected) >= Backend::kMaxPendingSteps)
      collect(last);
    // The feed may now reuse the buffer it handed out.
    backend.release_input();
    if (hook && !out.interrupted) {
      line.clear();  // the hook's lines start on a line of their own
      c.hook(step + 1);
      // What the hook ran on the backend (a validation pass) is no step's activity.
      if (c.activity) backend.take_activity();
    }
    if (!draw) continue;
    const double elapsed = since(start);
    const double per_step = elapsed / double(k + 1);
    line.draw(
        fmt::format("{} step {}/{} loss {:.4f} lr {:.4g} {:.1f} img/s data wait {:.0f}% ETA {}",
                    c.label, step + 1, c.first_step + c.steps, last_loss, r.lr,
                    double(c.images_per_step) / r.total,
                    100.0 * window_wait / std::max(window_total, 1e-12),
                    duration_text(per_step * double(c.steps - k - 1))),
        last);
  }
  // The trace's copies of its steps, taken now: a device step's gap figures arrive with the
  // next step's records.
  for (size_t k = 0; k < records.size(); ++k) {
    const int64_t step = c.first_step + int64_t(k);
    if (!in_trace(step)) continue;
    out.trace.steps.push_back(records[k]);
    out.trace.numbers.push_back(step);
  }
  return out;
}

}  // namespace stoker
