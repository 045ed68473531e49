// SPDX-License-Identifier: Apache-2.0
// A progress line for long work on stderr: redrawn in place on a terminal (at most 10 per
// second), one plain line every few seconds otherwise (logs, CI). Thread-safe `add`.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

namespace stoker {

class Progress {
 public:
  // enabled = false: counts, draws nothing (library callers that must stay quiet).
  Progress(std::string what, uint64_t total, std::string unit, bool enabled = true);
  ~Progress();
  void add(uint64_t items, uint64_t bytes = 0);
  void finish();

 private:
  void draw(bool final);
  std::string what_, unit_;
  uint64_t total_;
  std::atomic<uint64_t> done_{0}, bytes_{0};
  int64_t start_ns_, last_draw_ns_;
  bool tty_, enabled_, finished_ = false;
  std::mutex mu_;
};

}  // namespace stoker
