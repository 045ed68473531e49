// SPDX-License-Identifier: Apache-2.0
#include "common/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "common/clock.h"

namespace stoker {

Progress::Progress(std::string what, uint64_t total, std::string unit, bool enabled)
    : what_(std::move(what)), unit_(std::move(unit)), total_(total), enabled_(enabled) {
  start_ns_ = last_draw_ns_ = now_ns();
  tty_ = isatty(STDERR_FILENO);
}

Progress::~Progress() {
  finish();
}

void Progress::add(uint64_t items, uint64_t bytes) {
  done_ += items;
  bytes_ += bytes;
  const int64_t t = now_ns();
  const int64_t interval = tty_ ? 100'000'000 : 5'000'000'000;
  if (!enabled_ || t - last_draw_ns_ < interval) return;
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock || t - last_draw_ns_ < interval || finished_) return;
  last_draw_ns_ = t;
  draw(false);
}

void Progress::finish() {
  std::lock_guard lock(mu_);
  if (finished_) return;
  finished_ = true;
  if (enabled_) draw(true);
}

void Progress::draw(bool final) {
  const uint64_t done = done_.load();
  const double secs = (now_ns() - start_ns_) * 1e-9;
  const double frac = total_ ? static_cast<double>(done) / total_ : 1.0;
  const double rate = secs > 0 ? done / secs : 0.0;
  const double eta = rate > 0 && total_ > done ? (total_ - done) / rate : 0.0;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(frac * kWidth);
  std::string bar(filled, '#');
  bar.resize(kWidth, ' ');
  std::string line = fmt::format("{} [{}] {}/{} {}  {:.1f} MB  {:.1f} s", what_, bar, done, total_,
                                 unit_, bytes_.load() / 1e6, secs);
  if (!final) line += fmt::format("  ETA {:.0f} s", eta);
  if (tty_) {
    std::fprintf(stderr, "\r%s\033[K%s", line.c_str(), final ? "\n" : "");
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

}  // namespace stoker
