// SPDX-License-Identifier: Apache-2.0
// The study's conclusions in words, computed from the cells' numbers: per (dataset,
// storage, consumer) what a parallel reader buys over serial, where adding readers stops
// paying, and which stage bounds the best cell; per (dataset, consumer) what each storage
// costs against the first one. Thresholds are named below; nothing is hard-coded per study.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
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

// Near 1 a tenth hides the difference ("1.0x"), so two decimals there.
std::string times(double ratio) {
  return ratio < 1.2 ? fmt::format("{:.2f}x", ratio) : fmt::format("{:.1f}x", ratio);
}

double wall(const Json* c) {
  return num_or(*c, "wall_s", 0);
}

// A cell's spread over its repeats (study_json.h); 0 for a single run.
double spread(const Json* c) {
  return report::spread(*c).value_or(0);
}

// The relative difference below which two cells are "the same": the run-to-run noise of
// either (their spread) or kSame, whichever is larger.
double noise(const Json* a, const Json* b) {
  return std::max({kSame, spread(a), spread(b)});
}

// "; repeats: 3 per cell, spread up to 4%" once per sentence, when cells were repeated.
std::string spread_note(const std::vector<const Json*>& cs) {
  double most = 0;
  size_t runs = 0;
  for (const Json* c : cs) {
    most = std::max(most, spread(c));
    if (c->contains("wall_s_runs") && (*c)["wall_s_runs"].is_array())
      runs = std::max(runs, (*c)["wall_s_runs"].size());
  }
  if (runs < 2) return "";
  return fmt::format("; {} runs per cell, spread up to {}", runs, pct(most));
}

const Json* fastest(const std::vector<const Json*>& cs) {
  const Json* best = nullptr;
  for (const Json* c : cs)
    if (!best || wall(c) < wall(best)) best = c;
  return best;
}

std::string ms(double v) {
  return v >= 10  ? fmt::format("{:.0f}", v)
         : v >= 1 ? fmt::format("{:.1f}", v)
                  : fmt::format("{:.2f}", v);
}

// The bound S1's rule wrote, or the same rule's outline where the field is missing.
std::string bound_of(const Json& c) {
  std::string b = str(c, "bound");
  if (!b.empty()) return b;
  if (const auto w = num(c, "data_wait_share"); w && *w < kComputeBound) return "compute";
  const Json& cpu = obj(c, "cpu_ms_per_image");
  if (cpu.empty()) return "";
  return num_or(cpu, "read", 0) > num_or(cpu, "decode", 0) ? "read" : "decode";
}

// Why the cell is as fast as it is, from its bound and per-stage CPU times.
std::string explain_bound(const Json& c, double online_cpus) {
  const std::string b = bound_of(c);
  const double wait = num_or(c, "data_wait_share", 0);
  const Json& cpu = obj(c, "cpu_ms_per_image");
  const double read = num_or(cpu, "read", 0), decode = num_or(cpu, "decode", 0);
  const double total = read + decode + num_or(cpu, "augment", 0) + num_or(cpu, "collate", 0);
  std::string out;
  if (b == "compute") {
    out = fmt::format(": the consumer is the bottleneck (data wait {})", pct(wait));
  } else if (b == "decode") {
    out = fmt::format(" is decode-bound (data wait {}; decoding takes {} of {} CPU ms per image)",
                      pct(wait), ms(decode), ms(total));
  } else if (b == "read") {
    out = fmt::format(" is read-bound (data wait {}; {} MB/s, reading takes {} of {} ms per image)",
                      pct(wait), ms(num_or(c, "read_mb_per_s", 0)), ms(read), ms(total));
  } else if (b == "loader") {
    out = fmt::format(
        " is loader-bound, no single stage dominating (data wait {}; read {}, decode {}, "
        "augment {}, collate {} CPU ms per image)",
        pct(wait), ms(read), ms(decode), ms(num_or(cpu, "augment", 0)),
        ms(num_or(cpu, "collate", 0)));
  } else if (!b.empty()) {
    out = fmt::format(" is {}-bound (data wait {})", b, pct(wait));
  } else {
    out = fmt::format(" (data wait {})", pct(wait));
  }
  if (b != "compute" && b != "read" && online_cpus > 0)
    if (const auto cores = num(c, "cores_used"); cores && *cores >= 0.9 * online_cpus)
      out += fmt::format(", using all {} cores ({} busy)", online_cpus, ms(*cores));
  return out;
}

// "processes stops improving at 2 readers" or "still improves up to 4": on the reader
// kind swept over the most thread counts.
std::string scaling(const std::vector<const Json*>& group) {
  std::map<std::string, std::map<double, const Json*>> by_kind;
  for (const Json* c : group) {
    const std::string k = report::reader_kind(*c);
    if (k == "serial") continue;
    auto& slot = by_kind[k][report::reader_threads(*c)];
    if (!slot || wall(c) < wall(slot)) slot = c;
  }
  const std::map<double, const Json*>* sweep = nullptr;
  std::string kind;
  for (const auto& [k, m] : by_kind)
    if (m.size() >= 2 &&
        (!sweep || m.size() > sweep->size() || (m.size() == sweep->size() && k == "processes"))) {
      sweep = &m;
      kind = k;
    }
  if (!sweep) return "";
  const Json* best = nullptr;
  for (const auto& [w, c] : *sweep)
    if (!best || wall(c) < wall(best)) best = c;
  const Json* enough = nullptr;
  for (const auto& [w, c] : *sweep)
    if (wall(c) <= wall(best) * (1 + noise(c, best))) {
      enough = c;
      break;
    }
  const auto last = std::prev(sweep->end());
  if (enough != last->second) {
    const double n = report::reader_threads(*enough);
    // Within the run-to-run spread is not "nothing": it is noise larger than the effect.
    if (noise(enough, best) > kSame)
      return fmt::format(
          "{} readers beyond {}: can't tell at this spread ({} runs apart; {} faster at best)",
          kind, n, pct(noise(enough, best)), times(wall(enough) / wall(best)));
    return fmt::format("{} stops improving at {} reader{}: more buy nothing (within {:.0f}%)", kind,
                       n, n == 1 ? "" : "s", 100 * kSame);
  }
  const auto before = std::prev(last);
  return fmt::format("{} still improves at {} readers ({} faster than {})", kind, last->first,
                     times(wall(before->second) / wall(last->second)),
                     str(*before->second, "reader"));
}

std::string group_sentence(const std::vector<const Json*>& group, double online_cpus) {
  const Json& first = *group.front();
  std::vector<const Json*> serial, parallel;
  for (const Json* c : group)
    (report::reader_kind(*c) == "serial" ? serial : parallel).push_back(c);
  std::vector<std::string> parts;
  const Json* s = fastest(serial);
  const Json* p = fastest(parallel);
  const bool compute_bound = s && p && num_or(*s, "data_wait_share", 1) < kComputeBound &&
                             num_or(*p, "data_wait_share", 1) < kComputeBound;
  if (compute_bound) {
    // Neither waits for data: whatever their times differ by is not the reader's doing.
    parts.push_back(fmt::format(
        "the reader does not matter here: the consumer is the bottleneck (serial waits {}, {} "
        "waits {})",
        pct(num_or(*s, "data_wait_share", 0)), str(*p, "reader"),
        pct(num_or(*p, "data_wait_share", 0))));
  } else if (s && p) {
    const double ratio = wall(s) / wall(p);
    if (ratio > 1 + noise(s, p)) {
      parts.push_back(
          fmt::format("the serial reader waits {} of the time; {} cuts it to {} ({} faster)",
                      pct(num_or(*s, "data_wait_share", 0)), str(*p, "reader"),
                      pct(num_or(*p, "data_wait_share", 0)), times(ratio)));
    } else if (noise(s, p) > kSame) {
      parts.push_back(fmt::format(
          "serial against parallel readers: can't tell at this spread ({}; best: {}, {} the time "
          "of serial; serial waits {})",
          pct(noise(s, p)), str(*p, "reader"), times(1 / ratio),
          pct(num_or(*s, "data_wait_share", 0))));
    } else {
      parts.push_back(fmt::format(
          "no parallel reader beats serial by more than {:.0f}% (best: {}, {} the time of serial; "
          "serial waits {})",
          100 * noise(s, p), str(*p, "reader"), times(1 / ratio),
          pct(num_or(*s, "data_wait_share", 0))));
    }
    // Gaps say something the wait does not only where they differ from it (between
    // kernels or primitives); an emulated consumer's gaps are its waits.
    const auto gs = num(*s, "gap_share"), gp = num(*p, "gap_share");
    const double ws = num_or(*s, "data_wait_share", 0);
    if (gs && gp && *gs - *gp >= kSame && *gs - ws >= kSame)
      parts.push_back(fmt::format("the serial reader leaves {} gaps vs {} for {}", pct(*gs),
                                  pct(*gp), str(*p, "reader")));
  } else if (s) {
    parts.push_back(fmt::format("the serial reader waits {} of the time",
                                pct(num_or(*s, "data_wait_share", 0))));
  }
  if (const std::string sc = scaling(group); !sc.empty() && !compute_bound) parts.push_back(sc);
  const Json* best = fastest(group);
  parts.push_back(fmt::format("fastest: {} ({} s, {} images/s){}", str(*best, "reader"),
                              ms(wall(best)), ms(num_or(*best, "images_per_s", 0)),
                              explain_bound(*best, online_cpus)));
  std::string out = fmt::format("{} on {} with {}: ", str(first, "dataset"), str(first, "storage"),
                                str(first, "consumer"));
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? "; " : "") + parts[i];
  return out + spread_note(group) + ".";
}

// Per (dataset, consumer, reader): each storage against the first one, and how much of a
// per-file storage's loss its sharded twin ("X-shards", or "shards" for the first) wins back.
std::vector<std::string> storage_sentences(const std::vector<const Json*>& cs) {
  std::vector<std::string> out;
  const auto storages = report::distinct(cs, "storage");
  if (storages.size() < 2) return out;
  for (const auto& dataset : report::distinct(cs, "dataset"))
    for (const auto& consumer : report::distinct(cs, "consumer")) {
      // The serial reader shows the storage most plainly; else the first reader there is.
      std::map<std::string, std::map<std::string, const Json*>> at;  // reader -> storage -> cell
      for (const Json* c : cs)
        if (str(*c, "dataset") == dataset && str(*c, "consumer") == consumer)
          at[str(*c, "reader")][str(*c, "storage")] = c;
      std::string reader = at.count("serial") ? "serial" : "";
      if (reader.empty())
        for (const Json* c : cs)
          if (str(*c, "dataset") == dataset && str(*c, "consumer") == consumer) {
            reader = str(*c, "reader");
            break;
          }
      if (reader.empty()) continue;
      const auto& by_storage = at[reader];
      const std::string& base = storages.front();
      if (!by_storage.count(base) || by_storage.size() < 2) continue;
      const double t_base = wall(by_storage.at(base));
      std::vector<std::string> items;
      for (const auto& st : storages) {
        if (st == base || !by_storage.count(st)) continue;
        const double r = wall(by_storage.at(st)) / t_base;
        const double same = noise(by_storage.at(st), by_storage.at(base));
        std::string item =
            std::fabs(r - 1) > same
                ? fmt::format("{} is {} {} than {}", st, times(r > 1 ? r : 1 / r),
                              r > 1 ? "slower" : "faster", base)
            : same > kSame
                ? fmt::format("{} against {}: can't tell at this spread ({} apart, spread {})", st,
                              base, pct(std::fabs(r - 1)), pct(same))
                : fmt::format("{} is as fast as {} (within {:.0f}%)", st, base, 100 * same);
        const std::string suffix = "-shards";
        const std::string twin = st.size() > suffix.size() && st.ends_with(suffix)
                                     ? st.substr(0, st.size() - suffix.size())
                                     : "";
        if (!twin.empty() && twin != base && by_storage.count(twin)) {
          const double t_twin = wall(by_storage.at(twin));
          const double t_st = wall(by_storage.at(st));
          // A share of the loss only means something when the shards are faster than the
          // per-file twin; slower shards are said as such, not as a negative recovery.
          // Shards at least as fast as the base recover all of the loss, never "110%" of it.
          if (t_twin > t_base * (1 + kSame) && t_st < t_twin)
            item += t_st <= t_base ? fmt::format(", recovering all of what per-file {} loses", twin)
                                   : fmt::format(", recovering {:.0f}% of what per-file {} loses",
                                                 100 * (t_twin - t_st) / (t_twin - t_base), twin);
          else if (t_st > t_twin * (1 + kSame))
            item += fmt::format(" (and {} slower than per-file {})", times(t_st / t_twin), twin);
        }
        items.push_back(item);
      }
      if (items.empty()) continue;
      std::string s = fmt::format("{} with {}, {} reader: ", dataset, consumer, reader);
      for (size_t i = 0; i < items.size(); ++i) s += (i ? "; " : "") + items[i];
      out.push_back(s + ".");
    }
  return out;
}

}  // namespace

std::vector<std::string> conclusions(const nlohmann::json& study) {
  std::vector<std::string> out;
  const Json& ctx = obj(study, "context");
  const auto all = report::cells(study);
  std::vector<const Json*> good, failed;
  for (const Json* c : all) {
    if (report::ok(*c))
      good.push_back(c);
    else if (str(*c, "status", "ok") != "ok")
      failed.push_back(c);
  }
  const std::string state = str(ctx, "state");
  const auto planned = num(ctx, "planned_cells");
  if (state == "interrupted" || state == "running")
    out.push_back(
        fmt::format("The study {} after {}{} cells: what follows covers the finished cells only.",
                    state == "running" ? "is still running" : "was interrupted", all.size(),
                    planned ? fmt::format(" of {}", *planned) : ""));
  if (good.empty()) {
    out.push_back(all.empty() ? "No cell has finished yet." : "No cell finished successfully.");
  } else {
    const double cpus = num_or(ctx, "online_cpus", 0);
    // Groups in sweep order.
    std::vector<std::vector<const Json*>> groups;
    std::vector<std::string> keys;
    for (const Json* c : good) {
      const std::string key =
          str(*c, "dataset") + '\n' + str(*c, "storage") + '\n' + str(*c, "consumer");
      const auto it = std::find(keys.begin(), keys.end(), key);
      if (it == keys.end()) {
        keys.push_back(key);
        groups.push_back({c});
      } else {
        groups[static_cast<size_t>(it - keys.begin())].push_back(c);
      }
    }
    for (const auto& g : groups) out.push_back(group_sentence(g, cpus));
    for (auto& s : storage_sentences(good)) out.push_back(std::move(s));
    // Which stage bounds the cells, counted.
    std::map<std::string, size_t> bounds;
    for (const Json* c : good) ++bounds[bound_of(*c).empty() ? "unknown" : bound_of(*c)];
    std::string tally;
    for (const auto& [b, n] : bounds)
      tally += fmt::format("{}{} {}", tally.empty() ? "" : ", ", n, b);
    out.push_back(fmt::format("Of {} finished cells, by the stage that bounds them: {}.",
                              good.size(), tally));
  }
  if (!failed.empty()) {
    std::string s = fmt::format("{} cell{} failed: ", failed.size(), failed.size() == 1 ? "" : "s");
    for (size_t i = 0; i < failed.size() && i < 3; ++i)
      s += fmt::format("{}{} on {} with {}, {} ({})", i ? "; " : "", str(*failed[i], "dataset"),
                       str(*failed[i], "storage"), str(*failed[i], "consumer"),
                       str(*failed[i], "reader"), str(*failed[i], "error", "no reason recorded"));
    if (failed.size() > 3) s += fmt::format("; and {} more (see the table)", failed.size() - 3);
    out.push_back(s + ".");
  }
  return out;
}

}  // namespace stoker
