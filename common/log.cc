// SPDX-License-Identifier: Apache-2.0
#include "common/log.h"

#include <cstdio>
#include <mutex>

namespace stoker {
namespace {

std::mutex& sink_mutex() {
  static std::mutex mu;
  return mu;
}

LogSink& sink() {
  static LogSink s;
  return s;
}

void log(LogLevel level, const std::string& text) {
  std::lock_guard lock(sink_mutex());
  if (sink()) {
    sink()(level, text);
    return;
  }
  // One fprintf per line: lines from several threads (and worker processes) do not interleave.
  std::fprintf(stderr, "stoker: %s%s\n", level == LogLevel::warning ? "warning: " : "",
               text.c_str());
  std::fflush(stderr);
}

}  // namespace

void set_log_sink(LogSink s) {
  std::lock_guard lock(sink_mutex());
  sink() = std::move(s);
}

void log_warning(const std::string& text) {
  log(LogLevel::warning, text);
}
void log_note(const std::string& text) {
  log(LogLevel::note, text);
}

}  // namespace stoker
