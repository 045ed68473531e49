// SPDX-License-Identifier: Apache-2.0
// `--reader auto`'s decisions, pure functions over measured steps and candidates (no clock, no
// loader): what a candidate is (a reader and a prefetch depth, and the cores it asks for),
// what a window of the CONSUMER's steps measured of it, when that window has seen enough
// (window_verdict), and which candidate to keep (choose_candidate). The search that measures
// them is reader_tuner.h's; the order it tries them in is tuning_candidates.h's.
//
// Both decisions compare rates through their standard errors: a difference is "clear" when it
// is more than `z` standard errors of the difference, and two candidates are "level" only when
// the measurement shows they are within `level_tolerance` of each other (the lead plus z
// standard errors of it inside the tolerance). A window too noisy to show either is neither:
// then the faster by its mean wins. (A rule that called candidates level whenever the noise was
// large kept `serial`, 8% slower over whole runs, on a 13%-noisy VM: docs/PERFORMANCE.md.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loader/readers/reader_spec.h"

namespace stoker {

struct TuningCandidate {
  ReaderSpec reader;
  size_t prefetch = 2;
  // The core split's candidates (tools/train/core_split.h): the CPU trainer's compute threads,
  // the reader above fixed; 0: a reader candidate.
  int compute_threads = 0;
  // The cores it asks for, the tie rule's "fewer cores": the compute threads of a split
  // candidate; else the loader threads, N of threads:N and processes:N, T of uring:QD:T, 1 for
  // serial (the consumer's own thread).
  int cores() const { return compute_threads > 0 ? compute_threads : reader.threads; }
  // "threads:2 prefetch 2"; a split candidate: "2 compute threads"
  std::string text() const;
};

// The thresholds of the decisions (defaults measured on the 2-core VMs: docs/PERFORMANCE.md).
struct TuningRules {
  double z = 2;                   // standard errors that make a difference clear
  double level_tolerance = 0.03;  // rates closer than this share of the faster are level
  double precision = 0.02;        // a window whose rate's standard error is this share is enough
  double busy_wait = 0.02;        // a data-wait share above this: the consumer waits for data
};

// How a candidate's window ended (window_verdict), as the report names it.
enum class WindowVerdict {
  go_on,    // not yet decided
  behind,   // clearly slower than the fastest so far: dropped early
  level,    // shown level with the fastest so far
  ahead,    // clearly faster than the fastest so far, and measured to `precision`
  precise,  // the first candidate, measured to `precision`
  full,     // the window's most steps, undecided
};
const char* verdict_name(WindowVerdict v);

// One candidate as its window measured it. A skipped one (it could not start) has `skipped`,
// the reason naming it, and no figures.
struct CandidateMeasure {
  TuningCandidate candidate;
  std::string skipped;     // non-empty: not measured, why
  size_t steps = 0;        // consumer steps in its window
  double steps_per_s = 0;  // the consumer's rate over the window
  double rate_se = 0;      // the rate's standard error, steps/s (step_rate below)
  double data_wait = 0;    // share of the window the consumer waited for batches, 0..1
  double cores_busy = 0;   // CPU seconds over the window (this process, its workers) / wall
  WindowVerdict verdict = WindowVerdict::full;
  bool measured() const { return skipped.empty() && steps > 0; }
};

// A window's rate, steps / their total time, and its standard error: the rate times the
// relative standard error of the mean step time (the steps' standard deviation / sqrt(n),
// over their mean). Fewer than two steps: the error is the rate itself (nothing known).
struct StepRate {
  double steps_per_s = 0;
  double se = 0;
};
StepRate step_rate(const std::vector<int64_t>& step_ns);

// Whether a window of steps `step_ns` (settling steps left out) has seen enough, against the
// fastest candidate measured before it (nullptr: none yet): never before `min_steps`; at
// `max_steps` always (full, if nothing else).
WindowVerdict window_verdict(const std::vector<int64_t>& step_ns, const CandidateMeasure* fastest,
                             size_t min_steps, size_t max_steps, const TuningRules& rules);

// Whether `x` is shown level with `top` (the faster): the lead plus `z` standard errors of it
// within `level_tolerance` of top's rate.
bool level_with(const CandidateMeasure& top, const CandidateMeasure& x, const TuningRules& rules);

// The fastest measured candidate of `m` (SIZE_MAX: none).
size_t fastest_of(const std::vector<CandidateMeasure>& m);

struct TuningChoice {
  size_t best = SIZE_MAX;  // index into the measures; SIZE_MAX: none was measured
  std::string why;         // one sentence: the rate, and the tie rule where it applied
};

// What a choice is made against: the incumbent (m's index of the reader the search started
// from, the default; SIZE_MAX or unmeasured: none) unless a candidate is clearly faster than
// it (by more than z standard errors of the difference, and by more than level_tolerance),
// then the fastest of those; with no incumbent, the fastest. Leaving the default on a
// difference the windows cannot show costs a switch and gains nothing measurable (a run chose
// processes:2 over threads:2 on 0.5%, inside the noise, and trained 4% slower).
size_t reference_of(const std::vector<CandidateMeasure>& m, const TuningRules& rules,
                    size_t incumbent = SIZE_MAX);

// The best of `m`: the reference (above); but every candidate shown level with it competes,
// and of those the one asking for the fewest cores wins, then the faster, then the earlier in
// the list. Skipped and unmeasured candidates never win; none measured: best = SIZE_MAX and
// why says so.
TuningChoice choose_candidate(const std::vector<CandidateMeasure>& m, const TuningRules& rules,
                              size_t incumbent = SIZE_MAX);

}  // namespace stoker
