// SPDX-License-Identifier: Apache-2.0
#include "loader/tuning/tuning_candidates.h"

#include <algorithm>

#include "common/error.h"

namespace stoker {

std::vector<TuningCandidate> reader_candidates(int cores, size_t prefetch) {
  cores = std::max(cores, 1);
  std::vector<int> counts;
  for (int n = 1; n < cores; n *= 2) counts.push_back(n);
  counts.push_back(cores);
  std::vector<TuningCandidate> out;
  out.push_back({{ReaderSpec::Kind::serial, 1, 0}, prefetch});
  for (int n : counts) out.push_back({{ReaderSpec::Kind::threads, n, 0}, prefetch});
  for (int n : counts) out.push_back({{ReaderSpec::Kind::processes, n, 0}, prefetch});
  for (int n : counts) out.push_back({{ReaderSpec::Kind::uring, n, 8 * n}, prefetch});
  return out;
}

std::vector<TuningCandidate> prefetch_candidates(const TuningCandidate& best) {
  std::vector<TuningCandidate> out;
  if (best.reader.kind == ReaderSpec::Kind::serial) return out;  // reads in the consumer's call
  for (size_t depth : {size_t{1}, std::min<size_t>(2 * best.prefetch, 8)}) {
    if (depth != best.prefetch) out.push_back({best.reader, depth});
  }
  return out;
}

const char* search_plan_name(SearchPlan p) {
  return p == SearchPlan::full ? "full" : "staged";
}

SearchPlan parse_search_plan(const std::string& text) {
  if (text == "staged") return SearchPlan::staged;
  if (text == "full") return SearchPlan::full;
  throw UsageError("--auto-search " + text + ": expected staged or full");
}

namespace {

bool same(const TuningCandidate& a, const TuningCandidate& b) {
  return a.text() == b.text();
}

const CandidateMeasure* find(const std::vector<CandidateMeasure>& tried, const TuningCandidate& c) {
  for (const CandidateMeasure& m : tried)
    if (same(m.candidate, c)) return &m;
  return nullptr;
}

bool was_tried(const std::vector<CandidateMeasure>& tried, const TuningCandidate& c) {
  return find(tried, c) != nullptr;
}

std::optional<TuningCandidate> next_in_full(const std::vector<TuningCandidate>& readers,
                                            const std::vector<CandidateMeasure>& tried,
                                            const TuningRules& rules) {
  if (tried.size() < readers.size()) return readers[tried.size()];
  const std::vector<CandidateMeasure> swept(tried.begin(), tried.begin() + readers.size());
  const TuningChoice c = choose_candidate(swept, rules, incumbent_of(readers, swept));
  if (c.best == SIZE_MAX) return std::nullopt;
  const std::vector<TuningCandidate> depths = prefetch_candidates(swept[c.best].candidate);
  const size_t k = tried.size() - readers.size();
  if (k < depths.size()) return depths[k];
  return std::nullopt;
}

// Fewer cores than the start: its kind at each smaller count of `readers`, largest first, then
// serial; the next untried rung while the one before it held (the fastest, or level with it).
std::optional<TuningCandidate> next_fewer(const std::vector<TuningCandidate>& readers,
                                          const std::vector<CandidateMeasure>& tried,
                                          const TuningCandidate& start, const TuningRules& rules) {
  std::vector<TuningCandidate> ladder;
  for (const TuningCandidate& c : readers)
    if (c.reader.kind == start.reader.kind && c.cores() < start.cores()) ladder.push_back(c);
  std::stable_sort(ladder.begin(), ladder.end(),
                   [](const auto& a, const auto& b) { return a.cores() > b.cores(); });
  for (const TuningCandidate& c : readers)
    if (c.reader.kind == ReaderSpec::Kind::serial && start.reader.kind != c.reader.kind)
      ladder.push_back(c);
  const size_t top = reference_of(tried, rules, incumbent_of(readers, tried));
  TuningCandidate prev = start;
  for (const TuningCandidate& c : ladder) {
    if (!was_tried(tried, c)) {
      const CandidateMeasure* p = find(tried, prev);
      const bool held =
          p != nullptr && p->measured() &&
          (same(p->candidate, tried[top].candidate) || level_with(tried[top], *p, rules));
      if (held) return c;
      return std::nullopt;
    }
    prev = c;
  }
  return std::nullopt;
}

std::optional<TuningCandidate> next_in_staged(const std::vector<TuningCandidate>& readers,
                                              const std::vector<CandidateMeasure>& tried,
                                              const TuningRules& rules) {
  const TuningCandidate start = start_candidate(readers);
  if (!was_tried(tried, start)) return start;
  const TuningChoice choice = choose_candidate(tried, rules, incumbent_of(readers, tried));
  if (choice.best == SIZE_MAX) {  // the start could not run: what is left, in order
    for (const TuningCandidate& c : readers)
      if (!was_tried(tried, c)) return c;
    return std::nullopt;
  }
  const CandidateMeasure& best = tried[choice.best];
  if (best.data_wait <= rules.busy_wait) return next_fewer(readers, tried, start, rules);
  // It waits: the other kinds at its count, then deeper prefetch.
  for (const TuningCandidate& c : readers) {
    if (c.reader.kind != ReaderSpec::Kind::serial && c.cores() == best.candidate.cores() &&
        !was_tried(tried, c))
      return c;
  }
  if (best.candidate.reader.kind == ReaderSpec::Kind::serial) return std::nullopt;
  const TuningCandidate deeper{best.candidate.reader,
                               std::min<size_t>(2 * best.candidate.prefetch, 8)};
  if (deeper.prefetch > best.candidate.prefetch && !was_tried(tried, deeper)) return deeper;
  return std::nullopt;
}

}  // namespace

TuningCandidate start_candidate(const std::vector<TuningCandidate>& readers) {
  const TuningCandidate* s = &readers.front();
  for (const TuningCandidate& c : readers) {
    const bool more = c.cores() > s->cores();
    const bool threads_first = c.cores() == s->cores() &&
                               c.reader.kind == ReaderSpec::Kind::threads &&
                               s->reader.kind != ReaderSpec::Kind::threads;
    if (more || threads_first) s = &c;
  }
  return *s;
}

ReaderSpec auto_start_reader(int cores) {
  return start_candidate(reader_candidates(cores, 1)).reader;
}

size_t incumbent_of(const std::vector<TuningCandidate>& readers,
                    const std::vector<CandidateMeasure>& tried) {
  if (readers.empty()) return SIZE_MAX;
  const TuningCandidate start = start_candidate(readers);
  for (size_t i = tried.size(); i-- > 0;)
    if (same(tried[i].candidate, start) && tried[i].measured()) return i;
  return SIZE_MAX;
}

std::optional<TuningCandidate> next_candidate(const std::vector<TuningCandidate>& readers,
                                              const std::vector<CandidateMeasure>& tried,
                                              SearchPlan plan, const TuningRules& rules) {
  if (readers.empty()) return std::nullopt;
  return plan == SearchPlan::full ? next_in_full(readers, tried, rules)
                                  : next_in_staged(readers, tried, rules);
}

}  // namespace stoker
