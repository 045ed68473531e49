// SPDX-License-Identifier: Apache-2.0
#include "python/src/log_bridge.h"

#include <deque>
#include <mutex>

#include "common/log.h"

namespace stoker::py {
namespace {

struct Queue {
  std::mutex mu;
  std::deque<std::pair<std::string, std::string>> lines;
  size_t dropped = 0;
};

Queue& queue() {
  static Queue q;  // never destroyed: a loader thread may log while the interpreter exits
  return q;
}

}  // namespace

void install_log_sink() {
  set_log_sink([](LogLevel level, const std::string& text) {
    Queue& q = queue();
    std::lock_guard lock(q.mu);
    if (q.lines.size() >= kLogQueueMax) {
      ++q.dropped;
      return;
    }
    q.lines.emplace_back(level == LogLevel::warning ? "warning" : "note", text);
  });
}

std::vector<std::pair<std::string, std::string>> drain_log() {
  Queue& q = queue();
  std::lock_guard lock(q.mu);
  std::vector<std::pair<std::string, std::string>> out(q.lines.begin(), q.lines.end());
  q.lines.clear();
  if (q.dropped > 0) {
    out.emplace_back("warning", std::to_string(q.dropped) +
                                    " more messages were dropped (more than " +
                                    std::to_string(kLogQueueMax) + " between two batches)");
    q.dropped = 0;
  }
  return out;
}

}  // namespace stoker::py
