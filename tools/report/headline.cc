// SPDX-License-Identifier: Apache-2.0
// The report's answer, first on the page (issue 47), in the words of the storage
// qualification (issue 42: how many accelerators can this storage and these cores feed): at
// each size, what bounds training (the storage, the decode CPU, or the accelerator itself),
// how many cores one accelerator needs, and what more readers buy, or "can't tell at this
// spread" where the run-to-run spread is larger than the effect. Then how loaded the machine
// was. Emulated consumers only: they are the accelerator whose rate the sums need.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "tools/report/report.h"
#include "tools/report/study_json.h"

namespace stoker {

using report::Json;
using report::num;
using report::num_or;
using report::obj;
using report::str;

namespace {

using report::kComputeBound;
using report::kSame;
constexpr auto pct = report::percent_text;

std::string num_text(double v) {
  return v >= 100  ? fmt::format("{:.0f}", v)
         : v >= 10 ? fmt::format("{:.1f}", v)
                   : fmt::format("{:.2f}", v);
}

// The accelerator's rate for an emulated consumer, from the context's consumers.
std::optional<double> accelerator_rate(const Json& ctx, const std::string& consumer) {
  for (const auto& c : report::arr(ctx, "consumers"))
    if (str(c, "name") == consumer) return num(c, "images_per_s");
  return std::nullopt;
}

// CPU time per image: the cores the cell kept busy over its rate (every thread and worker
// process counted), else the sum of its stage times.
double cpu_ms_per_image(const Json& c) {
  const auto cores = num(c, "cores_used"), ips = num(c, "images_per_s");
  if (cores && ips && *ips > 0) return 1000 * *cores / *ips;
  const Json& cpu = obj(c, "cpu_ms_per_image");
  return num_or(cpu, "read", 0) + num_or(cpu, "decode", 0) + num_or(cpu, "augment", 0) +
         num_or(cpu, "collate", 0);
}

std::string bound_words(const Json& best) {
  if (num_or(best, "data_wait_share", 1) < kComputeBound) return "the accelerator (it is fed)";
  const std::string b = str(best, "bound");
  if (b == "read") return "the storage";
  if (b == "compute") return "the accelerator (it is fed)";
  return "the decode CPU";  // decode, loader: the loader's CPU work
}

// What more readers buy: the best parallel reader against serial (or the fewest readers),
// called only where the difference is larger than the cells' spread.
std::string readers_words(const std::vector<const Json*>& cs) {
  const Json* base = nullptr;
  const Json* best = nullptr;
  for (const Json* c : cs) {
    if (!base || report::reader_threads(*c) < report::reader_threads(*base) ||
        (report::reader_kind(*c) == "serial" && report::reader_kind(*base) != "serial"))
      base = c;
    if (!best || num_or(*c, "wall_s", 0) < num_or(*best, "wall_s", 0)) best = c;
  }
  if (!base || base == best) return "more readers buy nothing measurable here";
  const double gain = num_or(*base, "wall_s", 0) / num_or(*best, "wall_s", 1) - 1;
  const double spread =
      std::max(report::spread(*base).value_or(0), report::spread(*best).value_or(0));
  if (gain <= std::max(kSame, spread))
    return spread > kSame ? fmt::format(
                                "more readers: can't tell at this spread ({} between runs, "
                                "{} between {} and {})",
                                pct(spread), pct(gain), str(*base, "reader"), str(*best, "reader"))
                          : fmt::format("more readers buy nothing (within {})", pct(kSame));
  return fmt::format("more readers buy {}x ({} against {})", num_text(1 + gain),
                     str(*best, "reader"), str(*base, "reader"));
}

std::string size_sentence(const std::vector<const Json*>& cs, double rate, double cpus) {
  const Json* best = nullptr;
  for (const Json* c : cs)
    if (!best || num_or(*c, "images_per_s", 0) > num_or(*best, "images_per_s", 0)) best = c;
  const double ips = num_or(*best, "images_per_s", 0);
  const double ms = cpu_ms_per_image(*best);
  const double cores = rate * ms / 1000;  // cores kept busy feeding `rate` images/s
  std::string s = fmt::format(
      "{} on {}: bound by {}. Best reader {}: {} images/s, {} of the accelerator's {}. One "
      "accelerator needs about {} cores of this CPU ({} CPU ms per image x {} images/s)",
      str(*best, "dataset"), str(*best, "storage"), bound_words(*best), str(*best, "reader"),
      num_text(ips), pct(ips / rate), num_text(rate), num_text(cores), num_text(ms),
      num_text(rate));
  if (cpus > 0 && cores > 0)
    s += fmt::format(
        ", so these {:.0f} cores, the loader's alone, could feed about {} accelerator{}", cpus,
        num_text(cpus / cores), cpus / cores >= 0.995 && cpus / cores < 1.005 ? "" : "s");
  return s + "; " + readers_words(cs) + ".";
}

std::string load_sentence(const Json& ctx) {
  const Json& load = obj(ctx, "machine_load");
  const auto other = num(load, "other_cores_busy");
  const Json& avg = report::arr(load, "loadavg_now");
  if (!other && avg.empty()) return "Machine load: not recorded (a study from before it was).";
  const double cpus = num_or(ctx, "online_cpus", 0);
  std::string s = "Machine load during the study: ";
  if (other)
    s += fmt::format("other processes kept {} of {:.0f} cores busy on average", num_text(*other),
                     cpus);
  if (!avg.empty() && avg[0].is_number())
    s += fmt::format("{}load average {} at the end", other ? "; " : "",
                     num_text(avg[0].get<double>()));
  if (other && cpus > 0 && *other > 0.25 * cpus)
    s += ": a loaded machine, so every figure here is lower than an idle one would give";
  return s + ".";
}

}  // namespace

std::vector<std::string> answer(const nlohmann::json& study) {
  const Json& ctx = obj(study, "context");
  const double cpus = num_or(ctx, "online_cpus", 0);
  std::vector<std::string> out;
  // Per (consumer, dataset, storage), in sweep order, the finished cells of emulated consumers.
  std::vector<std::string> keys;
  std::map<std::string, std::vector<const Json*>> groups;
  for (const Json* c : report::cells(study)) {
    if (!report::ok(*c) || !accelerator_rate(ctx, str(*c, "consumer"))) continue;
    const std::string key =
        str(*c, "consumer") + '\n' + str(*c, "dataset") + '\n' + str(*c, "storage");
    if (!groups.count(key)) keys.push_back(key);
    groups[key].push_back(c);
  }
  for (const std::string& key : keys) {
    const auto& g = groups[key];
    out.push_back(size_sentence(g, *accelerator_rate(ctx, str(*g.front(), "consumer")), cpus));
  }
  if (out.empty())
    out.push_back(
        "No finished cell has an emulated accelerator (emulated:SPEC), whose rate the answer "
        "needs: see the conclusions below.");
  out.push_back(load_sentence(ctx));
  return out;
}

}  // namespace stoker
