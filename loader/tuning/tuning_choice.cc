// SPDX-License-Identifier: Apache-2.0
#include "loader/tuning/tuning_choice.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace stoker {

std::string TuningCandidate::text() const {
  if (compute_threads > 0)
    return fmt::format("{} compute thread{}", compute_threads, compute_threads == 1 ? "" : "s");
  return fmt::format("{} prefetch {}", reader.text(), prefetch);
}

const char* verdict_name(WindowVerdict v) {
  switch (v) {
    case WindowVerdict::go_on:
      return "go_on";
    case WindowVerdict::behind:
      return "behind";
    case WindowVerdict::level:
      return "level";
    case WindowVerdict::ahead:
      return "ahead";
    case WindowVerdict::precise:
      return "precise";
    case WindowVerdict::full:
      return "full";
  }
  return "?";
}

StepRate step_rate(const std::vector<int64_t>& step_ns) {
  StepRate r;
  const size_t n = step_ns.size();
  double total = 0;
  for (int64_t t : step_ns) total += static_cast<double>(t);
  if (n == 0 || total <= 0) return r;
  const double mean = total / static_cast<double>(n);
  r.steps_per_s = 1e9 / mean;
  if (n < 2) {
    r.se = r.steps_per_s;
    return r;
  }
  double ss = 0;
  for (int64_t t : step_ns) ss += (static_cast<double>(t) - mean) * (static_cast<double>(t) - mean);
  const double sd = std::sqrt(ss / static_cast<double>(n - 1));
  r.se = r.steps_per_s * sd / std::sqrt(static_cast<double>(n)) / mean;
  return r;
}

namespace {

// The lead of `top` over `x` (steps/s, negative when x is faster) and its standard error.
struct Lead {
  double lead = 0, se = 0, base = 0;  // base: the faster rate, what the tolerance is a share of
};

Lead lead_of(double top_rate, double top_se, double x_rate, double x_se) {
  return {top_rate - x_rate, std::hypot(top_se, x_se), std::max(top_rate, x_rate)};
}

bool shown_level(const Lead& l, const TuningRules& r) {
  return std::fabs(l.lead) + r.z * l.se <= r.level_tolerance * l.base;
}

// The default a search started from, as its choice names it.
std::string started_from(const CandidateMeasure& m) {
  return m.candidate.compute_threads > 0 ? "the split it started from"
                                         : "the reader it started from";
}

}  // namespace

WindowVerdict window_verdict(const std::vector<int64_t>& step_ns, const CandidateMeasure* fastest,
                             size_t min_steps, size_t max_steps, const TuningRules& rules) {
  const size_t n = step_ns.size();
  if (n < std::max<size_t>(min_steps, 1)) return WindowVerdict::go_on;
  const StepRate r = step_rate(step_ns);
  const bool precise = r.se <= rules.precision * r.steps_per_s;
  if (fastest != nullptr && fastest->measured()) {
    const Lead l = lead_of(fastest->steps_per_s, fastest->rate_se, r.steps_per_s, r.se);
    if (shown_level(l, rules)) return WindowVerdict::level;
    if (l.lead > rules.z * l.se) return WindowVerdict::behind;
    if (-l.lead > rules.z * l.se && precise) return WindowVerdict::ahead;
  } else if (precise) {
    return WindowVerdict::precise;
  }
  return n >= max_steps ? WindowVerdict::full : WindowVerdict::go_on;
}

bool level_with(const CandidateMeasure& top, const CandidateMeasure& x, const TuningRules& rules) {
  return shown_level(lead_of(top.steps_per_s, top.rate_se, x.steps_per_s, x.rate_se), rules);
}

size_t fastest_of(const std::vector<CandidateMeasure>& m) {
  size_t fastest = SIZE_MAX;
  for (size_t i = 0; i < m.size(); ++i) {
    if (m[i].measured() && (fastest == SIZE_MAX || m[i].steps_per_s > m[fastest].steps_per_s))
      fastest = i;
  }
  return fastest;
}

size_t reference_of(const std::vector<CandidateMeasure>& m, const TuningRules& rules,
                    size_t incumbent) {
  const size_t fastest = fastest_of(m);
  if (incumbent >= m.size() || !m[incumbent].measured()) return fastest;
  const CandidateMeasure& inc = m[incumbent];
  size_t ref = incumbent;
  for (size_t i = 0; i < m.size(); ++i) {
    if (!m[i].measured()) continue;
    const Lead l = lead_of(m[i].steps_per_s, m[i].rate_se, inc.steps_per_s, inc.rate_se);
    // Faster beyond the noise, and by more than "level": 0.1% shown at 2 standard errors is
    // no reason to leave the default.
    const bool clearly_faster = l.lead > rules.z * l.se && l.lead > rules.level_tolerance * l.base;
    if (clearly_faster && (ref == incumbent || m[i].steps_per_s > m[ref].steps_per_s)) ref = i;
  }
  return ref;
}

TuningChoice choose_candidate(const std::vector<CandidateMeasure>& m, const TuningRules& rules,
                              size_t incumbent) {
  TuningChoice c;
  const size_t ref = reference_of(m, rules, incumbent);
  if (ref == SIZE_MAX) {
    c.why = "no candidate could be measured";
    return c;
  }
  const CandidateMeasure& top = m[ref];
  c.best = ref;
  for (size_t i = 0; i < m.size(); ++i) {
    if (!m[i].measured() || i == ref || !level_with(top, m[i], rules)) continue;
    const CandidateMeasure& b = m[c.best];
    const int ci = m[i].candidate.cores(), cb = b.candidate.cores();
    if (ci < cb || (ci == cb && m[i].steps_per_s > b.steps_per_s)) c.best = i;
  }
  const CandidateMeasure& won = m[c.best];
  const size_t fastest = fastest_of(m);
  if (c.best == ref && ref == fastest) {
    c.why =
        fmt::format("the highest rate: {:.2f} steps/s (+-{:.2f})", won.steps_per_s, won.rate_se);
  } else if (c.best == ref) {
    c.why = fmt::format(
        "{} it started from, {:.2f} steps/s (+-{:.2f}): none was shown faster ({} at "
        "{:.2f} +-{:.2f} is within the noise)",
        started_from(won), won.steps_per_s, won.rate_se, m[fastest].candidate.text(),
        m[fastest].steps_per_s, m[fastest].rate_se);
  } else {
    c.why = fmt::format(
        "level with {}, {} at {:.2f} steps/s (+-{:.2f}), within {:.0f}%: {:.2f} "
        "steps/s (+-{:.2f}) with fewer cores ({} against {})",
        ref == fastest ? "the fastest" : started_from(top), top.candidate.text(), top.steps_per_s,
        top.rate_se, 100 * rules.level_tolerance, won.steps_per_s, won.rate_se,
        won.candidate.cores(), top.candidate.cores());
  }
  return c;
}

}  // namespace stoker
