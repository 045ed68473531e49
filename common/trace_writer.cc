// SPDX-License-Identifier: Apache-2.0
#include "common/trace_writer.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/error.h"

namespace stoker {

TraceWindow parse_trace_window(std::string_view spec, std::string_view option,
                               std::string_view unit) {
  const std::string text(spec);
  // An option's validator passes no name: CLI11 puts it in front of the message.
  const std::string who = option.empty() ? "" : std::string(option) + " ";
  const size_t colon = text.find(':');
  TraceWindow w;
  try {
    if (colon == std::string::npos) throw std::invalid_argument("no colon");
    size_t used = 0;
    w.first = std::stoll(text.substr(0, colon), &used);
    if (used != colon) throw std::invalid_argument("trailing text");
    const std::string rest = text.substr(colon + 1);
    w.last = std::stoll(rest, &used);
    if (used != rest.size()) throw std::invalid_argument("trailing text");
  } catch (const std::logic_error&) {
    fail("{}'{}': expected A:B ({}, B excluded)", who, spec, unit);
  }
  if (w.last <= w.first) fail("{}'{}': the window is empty", who, spec);
  if (w.first < 0) fail("{}'{}': A must not be negative", who, spec);
  return w;
}

void TraceWriter::track(int pid, int64_t tid, std::string name, int sort_index) {
  tracks_.push_back({pid, tid, std::move(name), sort_index});
}

void TraceWriter::process(int pid, std::string name) {
  processes_.emplace_back(pid, std::move(name));
}

void TraceWriter::event(int pid, int64_t tid, std::string name, int64_t begin_ns, int64_t end_ns,
                        std::string category) {
  events_.push_back(
      {pid, tid, std::move(name), std::move(category), begin_ns, std::max(end_ns, begin_ns)});
}

std::string TraceWriter::json() const {
  int64_t base = std::numeric_limits<int64_t>::max();
  for (const Event& e : events_) base = std::min(base, e.begin_ns);
  if (events_.empty()) base = 0;
  std::vector<const Event*> order;
  order.reserve(events_.size());
  for (const Event& e : events_) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const Event* a, const Event* b) {
    if (a->pid != b->pid) return a->pid < b->pid;
    if (a->tid != b->tid) return a->tid < b->tid;
    return a->begin_ns < b->begin_ns;
  });
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [pid, name] : processes_)
    out.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}});
  for (const Track& t : tracks_) {
    out.push_back({{"name", "thread_name"},
                   {"ph", "M"},
                   {"pid", t.pid},
                   {"tid", t.tid},
                   {"args", {{"name", t.name}}}});
    out.push_back({{"name", "thread_sort_index"},
                   {"ph", "M"},
                   {"pid", t.pid},
                   {"tid", t.tid},
                   {"args", {{"sort_index", t.sort_index}}}});
  }
  for (const Event* e : order) {
    nlohmann::json j = {{"name", e->name},
                        {"ph", "X"},
                        {"ts", 1e-3 * double(e->begin_ns - base)},
                        {"dur", 1e-3 * double(e->end_ns - e->begin_ns)},
                        {"pid", e->pid},
                        {"tid", e->tid}};
    if (!e->category.empty()) j["cat"] = e->category;
    out.push_back(std::move(j));
  }
  return out.dump();
}

void TraceWriter::write(const std::string& path) const {
  std::ofstream f(path);
  f << json() << "\n";
  if (!f.good()) fail("trace: cannot write {}", path);
}

}  // namespace stoker
