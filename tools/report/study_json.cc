// SPDX-License-Identifier: Apache-2.0
// Tolerant reads of a study result: see study_json.h.
#include "tools/report/study_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace stoker::report {

namespace {
// {name, older name}: keys renamed since results were first written (issue 44 gave each
// figure one name). Each older name is read only where its new name is absent.
constexpr const char* kOlderNames[][2] = {
    {"threads", "workers"},
    {"stage", "copy"},  // step_s, per_size[].step_ms: the backend's host-to-device step
    {"data_wait_share", "data_wait_fraction"},  // train's results
    {"accelerator_utilisation", "au"},          // bench's emulation
    {"warmup", "timing_warmup"},                // train's context
    {"steps", "iterations"},                    // study's context and cells
};
}  // namespace

const Json* field(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  if (const auto it = j.find(key); it != j.end()) return &*it;
  for (const auto& [name, older] : kOlderNames)
    if (std::string_view(name) == key)
      if (const auto it = j.find(older); it != j.end()) return &*it;
  return nullptr;
}

std::optional<double> num(const Json& j, const char* key) {
  const Json* f = field(j, key);
  if (f == nullptr || !f->is_number()) return std::nullopt;
  const double v = f->get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

double num_or(const Json& j, const char* key, double fallback) {
  return num(j, key).value_or(fallback);
}

std::string str(const Json& j, const char* key, const std::string& fallback) {
  const Json* f = field(j, key);
  if (f == nullptr) return fallback;
  if (f->is_string()) return f->get<std::string>();
  if (f->is_number() || f->is_boolean()) return f->dump();
  return fallback;
}

namespace {
const Json& empty_of(Json::value_t t) {
  static const Json empty_object = Json::object();
  static const Json empty_array = Json::array();
  return t == Json::value_t::object ? empty_object : empty_array;
}
}  // namespace

const Json& obj(const Json& j, const char* key) {
  const Json* f = field(j, key);
  return f && f->is_object() ? *f : empty_of(Json::value_t::object);
}

const Json& arr(const Json& j, const char* key) {
  const Json* f = field(j, key);
  return f && f->is_array() ? *f : empty_of(Json::value_t::array);
}

std::vector<const Json*> cells(const Json& study) {
  std::vector<const Json*> out;
  for (const auto& c : arr(study, "results"))
    if (c.is_object()) out.push_back(&c);
  return out;
}

bool ok(const Json& cell) {
  return str(cell, "status", "ok") == "ok" && num(cell, "wall_s").value_or(0) > 0;
}

std::vector<std::string> distinct(const std::vector<const Json*>& cs, const char* key) {
  std::vector<std::string> out;
  for (const Json* c : cs) {
    const std::string v = str(*c, key);
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

double reader_threads(const Json& cell) {
  if (const auto t = num(cell, "threads")) return *t;
  const std::string r = str(cell, "reader");
  const auto colon = r.find(':');
  if (colon == std::string::npos) return 1;
  const double n = std::atof(r.c_str() + colon + 1);
  return n > 0 ? n : 1;
}

std::string reader_kind(const Json& cell) {
  const std::string k = str(cell, "reader_kind");
  if (!k.empty()) return k;
  const std::string r = str(cell, "reader");
  return r.substr(0, r.find(':'));
}

std::optional<double> spread(const Json& cell) {
  const Json& runs = arr(cell, "wall_s_runs");
  double lo = 1e300, hi = 0;
  size_t n = 0;
  for (const Json& r : runs)
    if (r.is_number()) {
      lo = std::min(lo, r.get<double>());
      hi = std::max(hi, r.get<double>());
      ++n;
    }
  const double median = num_or(cell, "wall_s", 0);
  if (n < 2 || !(median > 0) || hi < lo) return std::nullopt;
  return (hi - lo) / median;
}

std::string percent_text(double share) {
  if (share > 0 && share < 0.005) return "<1%";
  return fmt::format("{:.0f}%", 100 * share);
}

}  // namespace stoker::report
