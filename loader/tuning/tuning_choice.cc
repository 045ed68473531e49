// SPDX-License-Identifier: Apache-2.0
#include "loader/tuning/tuning_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace stoker {

std::string TuningCandidate::text() const {
  return fmt::format("{} prefetch {}", reader.text(), prefetch);
}

double rate_noise(const std::vector<int64_t>& step_ns, size_t parts, double floor) {
  int64_t total = 0;
  for (int64_t t : step_ns) total += t;
  if (total <= 0) return 0;
  const double rate = static_cast<double>(step_ns.size()) * 1e9 / static_cast<double>(total);
  if (parts < 2 || step_ns.size() < 2 * parts) return floor * rate;
  double lo = INFINITY, hi = 0;
  const size_t per = step_ns.size() / parts;
  for (size_t p = 0; p < parts; ++p) {
    int64_t ns = 0;
    // The last part takes the remainder: every step counts once.
    const size_t end = p + 1 == parts ? step_ns.size() : (p + 1) * per;
    for (size_t i = p * per; i < end; ++i) ns += step_ns[i];
    const double r =
        ns > 0 ? static_cast<double>(end - p * per) * 1e9 / static_cast<double>(ns) : 0;
    lo = std::min(lo, r);
    hi = std::max(hi, r);
  }
  return std::max((hi - lo) / 2, floor * rate);
}

TuningChoice choose_candidate(const std::vector<CandidateMeasure>& m) {
  TuningChoice c;
  size_t fastest = SIZE_MAX;
  for (size_t i = 0; i < m.size(); ++i) {
    if (m[i].measured() && (fastest == SIZE_MAX || m[i].steps_per_s > m[fastest].steps_per_s))
      fastest = i;
  }
  if (fastest == SIZE_MAX) {
    c.why = "no candidate could be measured";
    return c;
  }
  const CandidateMeasure& top = m[fastest];
  auto level = [&](const CandidateMeasure& x) {
    return top.steps_per_s - x.steps_per_s <= std::max(top.noise, x.noise);
  };
  c.best = fastest;
  for (size_t i = 0; i < m.size(); ++i) {
    if (!m[i].measured() || !level(m[i])) continue;
    const CandidateMeasure& b = m[c.best];
    const int ci = m[i].candidate.cores(), cb = b.candidate.cores();
    if (ci < cb || (ci == cb && m[i].steps_per_s > b.steps_per_s)) c.best = i;
  }
  const CandidateMeasure& won = m[c.best];
  if (c.best == fastest) {
    c.why = fmt::format("the highest rate: {:.2f} steps/s (+-{:.2f})", won.steps_per_s, won.noise);
  } else {
    c.why = fmt::format(
        "level with the fastest, {} at {:.2f} steps/s (+-{:.2f}), within the noise, at {:.2f} "
        "steps/s with fewer cores ({} against {})",
        top.candidate.text(), top.steps_per_s, top.noise, won.steps_per_s, won.candidate.cores(),
        top.candidate.cores());
  }
  return c;
}

}  // namespace stoker
