// SPDX-License-Identifier: Apache-2.0
#include "tools/tuning_report.h"

#include <fmt/format.h>

namespace stoker {

namespace {

// One "#   candidate  rate ..." line per candidate tried.
std::string candidate_lines(const TuningSearch& s) {
  std::string out;
  for (const CandidateMeasure& m : s.tried) {
    if (!m.skipped.empty()) {
      out += fmt::format("#   {:<26} skipped: {}\n", m.candidate.text(), m.skipped);
    } else {
      out += fmt::format(
          "#   {:<26} {:>8.2f} steps/s (+-{:.2f}), data wait {:>5.1f}%, cores busy {:.2f}, {} "
          "steps, {}\n",
          m.candidate.text(), m.steps_per_s, m.rate_se, 100 * m.data_wait, m.cores_busy, m.steps,
          verdict_name(m.verdict));
    }
  }
  return out;
}

nlohmann::json candidate_json(const TuningCandidate& c) {
  nlohmann::json j = {{"reader", c.reader.text()}, {"prefetch", c.prefetch}};
  if (c.compute_threads > 0) j["compute_threads"] = c.compute_threads;
  return j;
}

nlohmann::json search_json(const TuningSearch& s) {
  nlohmann::json tried = nlohmann::json::array();
  for (const CandidateMeasure& m : s.tried) {
    nlohmann::json t = candidate_json(m.candidate);
    t["cores"] = m.candidate.cores();
    if (!m.skipped.empty()) {
      t["skipped"] = m.skipped;
    } else {
      t.update({{"steps", m.steps},
                {"steps_per_s", m.steps_per_s},
                {"rate_se", m.rate_se},
                {"verdict", verdict_name(m.verdict)},
                {"data_wait", m.data_wait},
                {"cores_busy", m.cores_busy}});
    }
    tried.push_back(t);
  }
  return {{"reason", s.reason},       {"first_step", s.first_step},
          {"steps", s.steps},         {"seconds", s.seconds},
          {"cut_short", s.cut_short}, {"finished", s.finished},
          {"tried", tried},           {"chosen", candidate_json(s.chosen)},
          {"why", s.choice.why},      {"kept_previous", s.kept_previous}};
}

}  // namespace

std::string tuning_lines(const TuningSearch& s, size_t n) {
  std::string out = fmt::format(
      "# reader auto: search {} ({}), from step {}: {} steps, {:.2f} s{}\n", n, s.reason,
      s.first_step, s.steps, s.seconds, s.cut_short ? ", cut short by its bound" : "");
  out += candidate_lines(s);
  if (s.finished) {
    out += fmt::format("# reader auto: chose {}: {}\n", s.chosen.text(), s.choice.why);
  } else {
    out += fmt::format("# reader auto: no choice yet ({}); {} ran last\n", s.choice.why,
                       s.chosen.text());
  }
  return out;
}

std::string core_split_lines(const TuningSearch& s) {
  std::string out = fmt::format(
      "# core split: searched on scratch before the first step, reading with {} prefetch {}: {} "
      "steps, {:.2f} s, thrown away{}\n",
      s.tried.empty() ? std::string("?") : s.tried.front().candidate.reader.text(),
      s.tried.empty() ? size_t{0} : s.tried.front().candidate.prefetch, s.steps, s.seconds,
      s.cut_short ? ", cut short by its bound" : "");
  out += candidate_lines(s);
  out += fmt::format("# core split: chose {}: {}\n", s.chosen.text(), s.choice.why);
  return out;
}

nlohmann::json core_split_json(const TuningSearch& s) {
  nlohmann::json j = search_json(s);
  j["compute_threads"] = s.chosen.compute_threads;
  return j;
}

nlohmann::json tuning_json(const std::vector<TuningSearch>& searches) {
  nlohmann::json all = nlohmann::json::array();
  for (const TuningSearch& s : searches) all.push_back(search_json(s));
  nlohmann::json j = {{"searches", all}};
  j["chosen"] = all.empty() ? nlohmann::json(nullptr) : all.back()["chosen"];
  return j;
}

}  // namespace stoker
