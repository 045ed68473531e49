// SPDX-License-Identifier: Apache-2.0
#include "loader/readers/reader_spec.h"

#include <charconv>
#include <string_view>

#include "common/error.h"
#include "common/system_info.h"

namespace stoker {

std::string ReaderSpec::text() const {
  switch (kind) {
    case Kind::serial:
      return "serial";
    case Kind::threads:
      return "threads:" + std::to_string(threads);
    case Kind::processes:
      return "processes:" + std::to_string(threads);
    case Kind::uring:
      return "uring:" + std::to_string(queue_depth) + ":" + std::to_string(threads);
  }
  return "?";
}

namespace {

bool parse_count(std::string_view s, int& n, int max) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  return ec == std::errc() && end == s.data() + s.size() && n >= 1 && n <= max;
}

}  // namespace

ReaderSpec parse_reader(const std::string& text) {
  ReaderSpec p;
  const std::string_view t(text);
  const size_t colon = t.find(':');
  const std::string_view kind = t.substr(0, colon);
  const std::string_view arg = colon == std::string_view::npos ? "" : t.substr(colon + 1);
  if (kind == "serial" && colon == std::string_view::npos) return p;
  if (kind == "threads" && parse_count(arg, p.threads, 1024)) {
    p.kind = ReaderSpec::Kind::threads;
    return p;
  }
  if (kind == "processes" && parse_count(arg, p.threads, 1024)) {
    p.kind = ReaderSpec::Kind::processes;
    return p;
  }
  if (kind == "uring") {
    const size_t c2 = arg.find(':');
    p.threads = online_cpus();
    if (parse_count(arg.substr(0, c2), p.queue_depth, 4096) &&
        (c2 == std::string_view::npos || parse_count(arg.substr(c2 + 1), p.threads, 1024))) {
      p.kind = ReaderSpec::Kind::uring;
      return p;
    }
  }
  fail(
      "unknown reader '{}': expected serial, threads:N, processes:N or uring:QD[:T] (N threads "
      "or processes 1..1024; QD reads in flight 1..4096; T decode threads, default one per CPU)",
      text);
}

}  // namespace stoker
