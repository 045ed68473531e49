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
#include "common/measures.h"
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

}  // namespace

SyntheticFeed::SyntheticFeed(int64_t batch, int64_t height, int64_t width, int classes,
                             uint64_t seed, DType dtype, const HostMemory& memory)
    : memory_(memory), labels_(size_t(batch)) {
  Rng rng(seed);
  const size_t n = size_t(batch * 3 * height * width);
  const size_t bytes = n * dtype_bytes(dtype);
  images_ = memory_.allocate ? memory_.allocate(bytes) : ::operator new(bytes);
  if (dtype == DType::u8) {
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

namespace {

bool in_trace(const LoopConfig& c, int64_t step) {
  return step >= c.trace_begin && step < c.trace_end;
}

// One optimiser step, timed phase by phase: wait for the batch, re-plan when its size
// changed, stage, forward_backward, update with the scheduled rate. `trace`: where the
// batch's loader timings go when the step is in the trace window (else null).
StepRecord timed_step(Backend& backend, BatchFeed& feed, const LoopConfig& c, int64_t step,
                      LoopTrace* trace) {
  StepRecord r;
  r.begin_ns = now_ns();
  const HostBatch batch = feed.next();
  r.wait_end_ns = now_ns();
  if (trace != nullptr) {
    const std::span<const SampleTiming> t = feed.timings();
    trace->samples.emplace_back(t.begin(), t.end());
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
  return r;
}

// The gap figures of each step (StepRecord::busy, gap, ...) and their merge over the timed
// steps, from the activity records each collect takes (train/README.md, "Gap windows"): a
// CPU's step is windowed by the host's calls, a device's by its own records.
class StepGaps {
 public:
  StepGaps(const LoopConfig& c, bool asynchronous, LoopResult& out)
      : c_(c), asynchronous_(asynchronous), out_(out) {}

  // The step just begun: a device's idle time is intersected with the loop's data waits.
  void begun(const StepRecord& r) {
    if (asynchronous_) waits_.push_back({r.begin_ns, r.wait_end_ns});
  }

  // `activity` as the backend returned it, after records [first, records.size()) were
  // collected; a device's records are relabelled to step indices of this run in place.
  void add(std::vector<ActivityRecord>& activity, size_t first, bool final) {
    if (asynchronous_) return device(activity, final);
    for (size_t k = first; k < out_.records.size(); ++k) {
      // The engine works inside the loop's calls: the host's window bounds it.
      const StepRecord& r = out_.records[k];
      const Interval wait{r.begin_ns, r.wait_end_ns};
      GapStats g = gap_stats(activity, r.begin_ns, r.end_ns, std::span<const Interval>(&wait, 1));
      // The re-plan (Backend::reshape, a size schedule's) runs no primitive: idle by
      // construction, and a cost the per-size table reports apart. Left in, it went
      // "unexplained" in the account and into the gap share (issue 47).
      const int64_t replan = std::min(g.gap_ns, int64_t(std::llround(r.reshape * 1e9)));
      g.window_ns -= replan;
      g.gap_ns -= replan;
      fill(k, g);
    }
  }

 private:
  void fill(size_t index, const GapStats& g) {
    StepRecord& r = out_.records[index];
    r.window = 1e-9 * double(g.window_ns);
    r.busy = 1e-9 * double(g.busy_ns);
    r.gap = 1e-9 * double(g.gap_ns);
    r.gap_during_wait = 1e-9 * double(g.during_wait_ns);
    r.longest_gap = 1e-9 * double(g.longest_ns);
    r.gaps = g.gaps;
    if (int64_t(index) < c_.warmup) return;
    GapStats& into = out_.gaps;
    into.window_ns += g.window_ns;
    into.busy_ns += g.busy_ns;
    into.gap_ns += g.gap_ns;
    into.gaps += g.gaps;
    into.longest_ns = std::max(into.longest_ns, g.longest_ns);
    into.during_wait_ns += g.during_wait_ns;
    into.histogram.merge(g.histogram);
  }

  // A device's records: labels to step indices of this run (the last label is the last step
  // begun; records of steps before this run get -1), then each step windowed by its own
  // records on every stream (a CUDA Graph's kernels run on streams of their own); a step's
  // window closes with the next step's first record, so the newest step waits for the next
  // collect unless this is the last.
  void device(std::vector<ActivityRecord>& activity, bool final) {
    const int64_t steps = int64_t(out_.records.size());
    int64_t newest = -1;
    for (const ActivityRecord& a : activity) newest = std::max(newest, a.step);
    if (newest >= 0) label_offset_ = newest - (steps - 1);
    for (ActivityRecord& a : activity) {
      if (a.step < 0) continue;
      a.step -= label_offset_;
      if (a.step < 0) a.step = -1;
      // A straggler of a step already windowed would count twice: left out.
      if (a.step > windowed_) pending_.push_back(a);
    }
    const std::vector<DeviceStepGaps> windows = device_step_gaps(pending_, waits_, final);
    for (const DeviceStepGaps& d : windows) {
      STOKER_CHECK(d.step < steps);
      fill(size_t(d.step), d.stats);
    }
    if (windows.empty()) return;
    windowed_ = windows.back().step;
    std::erase_if(pending_, [&](const ActivityRecord& a) { return a.step <= windowed_; });
  }

  const LoopConfig& c_;
  const bool asynchronous_;  // BackendCaps::asynchronous
  LoopResult& out_;
  std::vector<Interval> waits_;          // the host's data waits, in order (device only)
  std::vector<ActivityRecord> pending_;  // records of steps not yet windowed
  int64_t windowed_ = -1;                // the last step whose device window is closed
  int64_t label_offset_ = 0;             // backend step label - index of the step in this run
};

// The trace window's activity records: a device's by their step label (now a step index of
// this run, made global as the trace names steps), the rest by the host's window.
void keep_trace_activity(const LoopConfig& c, bool asynchronous,
                         std::vector<ActivityRecord>& activity, LoopResult& out) {
  if (c.trace_end <= c.trace_begin) return;
  const std::vector<StepRecord>& records = out.records;
  const int64_t lo = std::max(c.trace_begin, c.first_step) - c.first_step;
  const int64_t hi = std::min(c.trace_end, c.first_step + c.steps) - c.first_step;
  if (hi <= lo || lo >= int64_t(records.size())) return;
  const int64_t host_begin = records[size_t(lo)].begin_ns;
  const int64_t host_end =
      records[size_t(std::min<int64_t>(hi, int64_t(records.size())) - 1)].end_ns;
  for (ActivityRecord& a : activity) {
    const bool by_step = asynchronous && a.step >= 0;
    const bool keep =
        by_step ? a.step >= lo && a.step < hi : a.end_ns > host_begin && a.begin_ns < host_end;
    if (!keep) continue;
    if (by_step) a.step += c.first_step;
    out.trace.activity.push_back(std::move(a));
  }
}

// The loop's records between steps: steps run but not yet collected, and what collecting
// them fills in (losses, the backend's phase times, gap figures, trace records).
class StepCollector {
 public:
  StepCollector(Backend& backend, const LoopConfig& c, LoopResult& out)
      : backend_(backend),
        c_(c),
        out_(out),
        asynchronous_(backend.caps().asynchronous),
        gaps_(c, asynchronous_, out) {
    out_.records.reserve(size_t(c.steps));
  }

  void add(const StepRecord& r) {
    out_.records.push_back(r);
    gaps_.begun(r);
  }
  size_t pending() const { return out_.records.size() - collected_; }
  float last_loss() const { return last_loss_; }

  // Fills the steps finished since the last collect; a non-finite loss ends the run here.
  void collect(bool final) {
    const std::vector<StepResult> results = backend_.collect();
    STOKER_CHECK_MSG(results.size() == pending(),
                     "the backend returned {} results for {} uncollected steps", results.size(),
                     pending());
    std::vector<ActivityRecord> activity;
    if (c_.activity) activity = backend_.diagnostics().take_activity();
    const size_t first = collected_;
    for (const StepResult& res : results) fill(collected_++, res);
    if (c_.activity) gaps_.add(activity, first, final);
    keep_trace_activity(c_, asynchronous_, activity, out_);
  }

 private:
  void fill(size_t index, const StepResult& res) {
    StepRecord& r = out_.records[index];
    const int64_t step = c_.first_step + int64_t(index);
    if (!std::isfinite(res.loss))
      fail("{}: the loss is {} at step {}: the run diverged (hint: a lower --lr or a warm-up)",
           c_.label, res.loss, step);
    r.loss = last_loss_ = res.loss;
    r.skipped = res.skipped;
    r.backend_stage = res.times.stage;
    r.forward = res.times.forward;
    r.backward = res.times.backward;
    r.update = res.times.update;
    r.allreduce_wait = res.times.allreduce_wait;
    r.stage_compute = res.times.stage_compute;
    r.engine_wall = res.times.wall;
    r.host_enqueue = res.host_enqueue;
  }

  Backend& backend_;
  const LoopConfig& c_;
  LoopResult& out_;
  const bool asynchronous_;  // BackendCaps::asynchronous
  StepGaps gaps_;
  size_t collected_ = 0;  // records[0, collected_) have their loss and backend times
  float last_loss_ = 0;
};

// The live line: step, loss, rate, the run's data-wait share so far, ETA. The rate is over
// the steps since the last line, on the wall clock: every line follows a collect, which
// waits for those steps, so a device that runs behind the host is timed by its own pace, not
// by how fast the host enqueues.
class ProgressLine {
 public:
  explicit ProgressLine(const LoopConfig& c)
      : c_(c), line_(c.progress), start_(Clock::now()), last_line_(start_) {}
  void add(const StepRecord& r) {
    wait_ += r.wait;
    total_ += r.total;
  }
  bool due(bool last) const { return line_.due(last); }
  void clear() { line_.clear(); }
  // After step `k` of this run (record `r`), whose loss was last collected as `loss`.
  void draw(int64_t k, const StepRecord& r, float loss, bool last) {
    const double per_step = since(start_) / double(k + 1);
    const double rate =
        images_per_s(double(c_.images_per_step) * double(k - last_k_), since(last_line_));
    last_k_ = k;
    last_line_ = Clock::now();
    line_.draw(
        fmt::format("{} step {}/{} loss {:.4f} lr {:.4g} {:.1f} img/s data wait {:.0f}% ETA {}",
                    c_.label, c_.first_step + k + 1, c_.first_step + c_.steps, loss, r.lr, rate,
                    100.0 * data_wait_share(wait_, total_),
                    duration_text(per_step * double(c_.steps - k - 1))),
        last);
  }

 private:
  const LoopConfig& c_;
  LiveLine line_;
  const Clock::time_point start_;
  Clock::time_point last_line_;  // when the last line was drawn (the start before the first)
  int64_t last_k_ = -1;          // the step it showed
  double wait_ = 0, total_ = 0;
};

// The trace's copies of its steps, taken at the end: a device step's gap figures arrive
// with the next step's records.
void keep_trace_steps(const LoopConfig& c, LoopResult& out) {
  for (size_t k = 0; k < out.records.size(); ++k) {
    const int64_t step = c.first_step + int64_t(k);
    if (!in_trace(c, step)) continue;
    out.trace.steps.push_back(out.records[k]);
    out.trace.numbers.push_back(step);
  }
}

}  // namespace

LoopResult train_loop(Backend& backend, BatchFeed& feed, const LoopConfig& c) {
  LoopResult out;
  out.asynchronous = backend.caps().asynchronous;
  StepCollector steps(backend, c, out);
  ProgressLine line(c);
  for (int64_t k = 0; k < c.steps && !out.interrupted; ++k) {
    const int64_t step = c.first_step + k;
    const StepRecord r =
        timed_step(backend, feed, c, step, in_trace(c, step) ? &out.trace : nullptr);
    steps.add(r);
    line.add(r);
    // An interrupt ends the run here, after a whole step, as if it were the last one.
    if (k + 1 < c.steps)
      out.interrupted = (c.agree_stop ? c.agree_stop(interrupt_signal()) : interrupt_signal()) != 0;
    const bool last = k + 1 == c.steps || out.interrupted;
    const bool hook = c.hook_every > 0 && c.hook && (step + 1) % c.hook_every == 0;
    const bool draw = line.due(last);
    if (draw || last || hook || int64_t(steps.pending()) >= Backend::kMaxPendingSteps)
      steps.collect(last);
    backend.release_input();  // the feed may now reuse the buffer it handed out
    if (hook && !out.interrupted) {
      line.clear();  // the hook's lines start on a line of their own
      c.hook(step + 1);
      // What the hook ran on the backend (a validation pass) is no step's activity.
      if (c.activity) backend.diagnostics().take_activity();
    }
    if (draw) line.draw(k, r, steps.last_loss(), last);
  }
  keep_trace_steps(c, out);
  return out;
}

}  // namespace stoker
