// SPDX-License-Identifier: Apache-2.0
#include "tools/tuning_report.h"

#include <fmt/format.h>

namespace stoker {

std::string tuning_lines(const TuningSearch& s, size_t n) {
  std::string out = fmt::format(
      "# reader auto: search {} ({}), from step {}: {} steps, {:.2f} s{}\n", n, s.reason,
      s.first_step, s.steps, s.seconds, s.cut_short ? ", cut short by its bound" : "");
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
  if (s.finished) {
    out += fmt::format("# reader auto: chose {}: {}\n", s.chosen.text(), s.choice.why);
  } else {
    out += fmt::format("# reader auto: no choice yet ({}); {} ran last\n", s.choice.why,
                       s.chosen.text());
  }
  return out;
}

nlohmann::json tuning_json(const std::vector<TuningSearch>& searches) {
  nlohmann::json all = nlohmann::json::array();
  for (const TuningSearch& s : searches) {
    nlohmann::json tried = nlohmann::json::array();
    for (const CandidateMeasure& m : s.tried) {
      nlohmann::json t = {{"reader", m.candidate.reader.text()},
                          {"prefetch", m.candidate.prefetch},
                          {"cores", m.candidate.cores()}};
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
    all.push_back(
        {{"reason", s.reason},
         {"first_step", s.first_step},
         {"steps", s.steps},
         {"seconds", s.seconds},
         {"cut_short", s.cut_short},
         {"finished", s.finished},
         {"tried", tried},
         {"chosen", {{"reader", s.chosen.reader.text()}, {"prefetch", s.chosen.prefetch}}},
         {"why", s.choice.why},
         {"kept_previous", s.kept_previous}});
  }
  nlohmann::json j = {{"searches", all}};
  j["chosen"] = all.empty() ? nlohmann::json(nullptr) : all.back()["chosen"];
  return j;
}

}  // namespace stoker
