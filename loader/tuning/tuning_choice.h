// SPDX-License-Identifier: Apache-2.0
// `--reader auto`'s decision, a pure function over measured candidates (no clock, no loader):
// what a candidate is (a reader and a prefetch depth, and the cores it asks for), what a
// short window of the CONSUMER's steps measured of it, and which one to keep. The search
// that measures them is reader_tuner.h's; the list it tries is tuning_candidates.h's.
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
  // The loader threads it asks for: N of threads:N and processes:N, T of uring:QD:T, 1 for
  // serial (the consumer's own thread). The tie rule's "fewer cores".
  int cores() const { return reader.threads; }
  std::string text() const;  // "threads:2 prefetch 2"
};

// One candidate as its window measured it. A skipped one (it could not start) has `skipped`,
// the reason naming it, and no figures.
struct CandidateMeasure {
  TuningCandidate candidate;
  std::string skipped;     // non-empty: not measured, why
  size_t steps = 0;        // consumer steps in its window
  double steps_per_s = 0;  // the consumer's rate over the window
  double noise = 0;        // steps/s: how far the rate moved within the window (see below)
  double data_wait = 0;    // share of the window the consumer waited for batches, 0..1
  double cores_busy = 0;   // CPU seconds over the window (this process, its workers) / wall
  bool measured() const { return skipped.empty() && steps > 0; }
};

// The noise of a window's rate: the window cut into `parts` equal runs of steps, the rate of
// each, and half their spread, at least `floor` of the rate (a window too short to split has
// the floor). `step_ns`: each step's wall time, in order.
double rate_noise(const std::vector<int64_t>& step_ns, size_t parts = 3, double floor = 0.02);

struct TuningChoice {
  size_t best = SIZE_MAX;  // index into the measures; SIZE_MAX: none was measured
  std::string why;         // one sentence: the rate, and the tie rule where it applied
};

// The best of `m`: the highest steps/s; but every candidate level with it (its rate within
// the larger of the two candidates' noise of the best's) competes, and of those the one
// asking for the fewest cores wins, then the faster, then the earlier in the list. Skipped
// and unmeasured candidates never win; none measured: best = SIZE_MAX and why says so.
TuningChoice choose_candidate(const std::vector<CandidateMeasure>& m);

}  // namespace stoker
