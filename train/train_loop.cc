// SPDX-License-Identifier: Apache-2.0
#include "train/train_loop.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "common/error.h"
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

 private:
  bool enabled_, tty_;
  Clock::time_point last_draw_{};
};

}  // namespace

SyntheticFeed::SyntheticFeed(int64_t batch, int64_t height, int64_t width, int classes,
                             uint64_t seed)
    : images_(size_t(batch * 3 * height * width)), labels_(size_t(batch)) {
  Rng rng(seed);
  fill_normal(rng, 1.0, images_);
  for (int32_t& y : labels_) y = int32_t(rng.next() % uint64_t(classes));
}

std::vector<StepRecord> train_loop(Backend& backend, BatchFeed& feed, const LoopConfig& c) {
  std::vector<StepRecord> records;
  records.reserve(size_t(c.steps));
  LiveLine line(c.progress);
  const auto start = Clock::now();
  double window_wait = 0, window_total = 0;
  for (int64_t k = 0; k < c.steps; ++k) {
    const int64_t step = c.first_step + k;
    StepRecord r;
    const auto t0 = Clock::now();
    const StepBatch batch = feed.next();
    r.wait = since(t0);
    r.loss = backend.forward_backward(batch.images, batch.labels);
    if (!std::isfinite(r.loss))
      fail("{}: the loss is {} at step {}: the run diverged (hint: a lower --lr or a warm-up)",
           c.label, r.loss, step);
    r.lr = lr_at(c.schedule, size_t(step));
    backend.update(c.sgd, float(r.lr));
    const StepTimes& t = backend.last_times();
    r.forward = t.forward;
    r.backward = t.backward;
    r.update = t.update;
    r.total = since(t0);
    records.push_back(r);

    window_wait += r.wait;
    window_total += r.total;
    const double elapsed = since(start);
    const double per_step = elapsed / double(k + 1);
    const bool last = k + 1 == c.steps;
    if (!line.due(last)) continue;
    line.draw(
        fmt::format("{} step {}/{} loss {:.4f} lr {:.4g} {:.1f} img/s data wait {:.0f}% ETA {}",
                    c.label, step + 1, c.first_step + c.steps, r.loss, r.lr,
                    double(c.images_per_step) / r.total,
                    100.0 * window_wait / std::max(window_total, 1e-12),
                    duration_text(per_step * double(c.steps - k - 1))),
        last);
  }
  return records;
}

}  // namespace stoker
