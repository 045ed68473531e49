// SPDX-License-Identifier: Apache-2.0
#include "tools/qualify/qualify_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <regex>

#include "common/error.h"
#include "tools/bench/bench_common.h"
#include "tools/report/study_json.h"

namespace stoker {

namespace {

bool is_link_name(const std::string& s) {
  static const std::regex rate(R"(^[1-9][0-9]*(gbit|mbit)$)");
  return s == "unshaped" || std::regex_match(s, rate);
}

}  // namespace

std::vector<QualifyStorage> parse_qualify_storages(const std::string& text) {
  std::vector<QualifyStorage> out;
  for (const std::string& item : split(text, ',')) {
    QualifyStorage s;
    s.name = item;
    const size_t at = item.find('@');
    const std::string kind = item.substr(0, at);
    if (at != std::string::npos) s.link = item.substr(at + 1);
    if (kind == "local" && at == std::string::npos) {
      s.kind = QualifyStorage::Kind::local;
    } else if (kind == "local-cold" && at == std::string::npos) {
      s.kind = QualifyStorage::Kind::local_cold;
    } else if (kind == "nfs" && (at == std::string::npos || is_link_name(s.link))) {
      s.kind = QualifyStorage::Kind::nfs;
    } else {
      usage_fail(
          "--storage: '{}' is none of local, local-cold, nfs (loopback) or nfs@LINK (LINK: 1gbit, "
          "10gbit, 25gbit, another Ngbit or Nmbit, or unshaped)",
          item);
    }
    for (const QualifyStorage& o : out)
      if (o.name == s.name) usage_fail("--storage: '{}' is given twice", item);
    out.push_back(std::move(s));
  }
  if (out.empty()) usage_fail("--storage: no storage given");
  return out;
}

AcceleratorProfile profile_from_train_json(const nlohmann::json& doc, const std::string& path) {
  const nlohmann::json* context = report::field(doc, "context");
  const nlohmann::json* results = report::field(doc, "results");
  const nlohmann::json* r = results && results->is_array() && !results->empty() ? &(*results)[0]
                            : results && results->is_object()                   ? results
                                                                                : nullptr;
  const nlohmann::json* rate = r ? report::field(*r, "images_per_s") : nullptr;
  if (context == nullptr || rate == nullptr || !rate->is_number() || rate->get<double>() <= 0)
    usage_fail(
        "--accelerator {}: not a `stoker train --json` result with a measured rate (no "
        "results[0].images_per_s above 0{})",
        path, r && r->contains("refused_images_per_s") ? ": the run refused its own rate" : "");
  AcceleratorProfile p;
  const double ips = rate->get<double>();
  p.accelerator = parse_emulation(fmt::format("{}img/s", ips));
  p.from = path;
  const auto text = [&](const char* key) {
    const nlohmann::json* v = report::field(*context, key);
    return v && v->is_string() ? v->get<std::string>() : std::string();
  };
  const std::string backend = text("backend");
  // "cuda resnet50 f16 (run.json)": the engine's first word, the model, the precision.
  std::string engine = backend.substr(0, backend.find(' '));  // "cpu:", "cuda:"
  while (!engine.empty() && engine.back() == ':') engine.pop_back();
  p.name = fmt::format("{} {} {} ({})", engine, text("arch"), text("precision"), short_name(path));
  const nlohmann::json* wait = report::field(*r, "data_wait_share");
  const nlohmann::json* synthetic = report::field(*context, "synthetic");
  const bool synth = synthetic && synthetic->is_boolean() && synthetic->get<bool>();
  if (!synth && wait && wait->is_number() && wait->get<double>() > 0.02)
    p.note = fmt::format(
        "its rate was measured with data and includes {:.0f}% data wait: a --synthetic run gives "
        "the accelerator's own rate",
        100 * wait->get<double>());
  return p;
}

AcceleratorProfile parse_accelerator_profile(const std::string& spec) {
  const bool file = spec.size() > 5 && spec.compare(spec.size() - 5, 5, ".json") == 0;
  if (!file) {
    AcceleratorProfile p;
    try {
      p.accelerator = parse_emulation(spec);
    } catch (const Error& e) {
      usage_fail("--accelerator: {} (or a `stoker train --json` file, *.json)", e.what());
    }
    p.name = spec;
    p.from = spec.find_first_not_of("0123456789.") == std::string::npos ||
                     spec.find('/') != std::string::npos || spec.find("img/s") != std::string::npos
                 ? "rate"
                 : "preset";
    return p;
  }
  std::ifstream in(spec);
  if (!in) usage_fail("--accelerator {}: cannot open it: {}", spec, errno_text(errno));
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  if (doc.is_discarded()) usage_fail("--accelerator {}: not valid JSON", spec);
  return profile_from_train_json(doc, spec);
}

const char* mode_name(QualifyMode m) {
  return m == QualifyMode::decode ? "decode" : "read";
}

std::vector<QualifyMode> parse_qualify_modes(const std::string& text) {
  std::vector<QualifyMode> out;
  for (const std::string& item : split(text, ',')) {
    QualifyMode m;
    if (item == "decode")
      m = QualifyMode::decode;
    else if (item == "read")
      m = QualifyMode::read;
    else
      usage_fail("--mode: '{}' is neither decode (real decode) nor read (read only)", item);
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  }
  if (out.empty()) usage_fail("--mode: no mode given");
  return out;
}

int next_accelerators(int held, int failed, int max) {
  if (failed == 0) {  // still doubling
    if (held >= max) return 0;
    return held == 0 ? 1 : std::min(2 * held, max);
  }
  if (failed - held <= 1) return 0;
  return held + (failed - held) / 2;
}

std::string qualify_bound(const BoundFacts& f) {
  if (f.link_mb_per_s > 0 && f.mb_per_s >= kLinkBound * f.link_mb_per_s) return "link";
  const double busy = std::max(f.machine_cores, f.loader_cores + f.server_cores);
  if (busy >= kCoresBound * f.host_cores) {
    if (f.server_cores > f.loader_cores) return "server";
    return f.decode ? "decode" : "cpu";
  }
  return "latency";
}

}  // namespace stoker
