// SPDX-License-Identifier: Apache-2.0
// `--reader auto`: an Iterator whose reader and prefetch depth are chosen while the run goes
// on, by the CONSUMER's rate (its steps per second: the trainer's, or the emulated
// accelerator's), not by the loader's images/s. The consumer pulls batches through next()
// instead of the iterator's; a step is the time from one request for a batch to the next
// (its data wait, then its compute), so the tuner needs nothing else from the consumer.
//
// A search walks the candidates in tuning_candidates.h's order (next_candidate: by default
// staged, the default reader first, then fewer cores while the consumer does not wait, or
// other kinds and deeper prefetch while it does). Each runs from a batch boundary
// (Iterator::switch_reader), its first `settle` steps left out (the new reader fills its
// prefetch), then a window of at least `min_window` and at most `window` steps, ended as soon
// as window_verdict (tuning_choice.h) decides: clearly behind the fastest so far (dropped
// early: a slow candidate costs few steps), shown level with it, or measured precisely enough.
// A candidate that cannot start is skipped and named. Then choose_candidate() over all, the
// reader it started from its incumbent; a choice that would leave that reader measures it once
// more first (confirmation()), and the best runs. Bounded: at most `max_steps` steps and
// `max_seconds` per search; what was measured by then decides.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loader/iterator.h"
#include "loader/tuning/tuning_candidates.h"
#include "loader/tuning/tuning_choice.h"

namespace stoker {

struct TunerLimits {
  size_t settle = 3;            // steps left out after each switch
  size_t min_window = 6;        // steps measured per candidate, at least
  size_t window = 24;           // and at most
  size_t max_steps = 400;       // a search's steps in all
  double max_seconds = 120;     // and its wall time
  double wait_threshold = 0.1;  // data wait share that starts a new search
  size_t cooldown = 100;        // steps after a search before the wait may start another
  SearchPlan plan = SearchPlan::staged;
  TuningRules rules;
};

// One search: why it began, every candidate as measured (or skipped), the choice and its
// reason, and what it cost.
struct TuningSearch {
  std::string reason;  // "start", "image side 112 -> 160", "data wait 23% above 10%"
  uint64_t first_step = 0;
  std::vector<CandidateMeasure> tried;
  TuningChoice choice;  // choice.best indexes `tried`
  TuningCandidate chosen;
  bool kept_previous = false;  // none measured (or the best could not start): what ran stays
  bool cut_short = false;      // the step or time bound ended it before every candidate ran
  bool finished = true;        // false: still running when report() was called (no choice)
  size_t steps = 0;
  double seconds = 0;
};

class ReaderTuner {
 public:
  // Searches from the first batch, choosing among `readers` (reader_candidates()); `it`
  // outlives it.
  ReaderTuner(Iterator& it, std::vector<TuningCandidate> readers, TunerLimits limits = {});

  // The iterator's next(), timed: the consumer is done with the batch before, so a switch
  // may happen here first.
  const Batch* next();
  // The iterator's start_epoch(); the interval across it is no step.
  void start_epoch(uint64_t epoch, uint64_t start = 0);
  // The consumer did something else since its last request (a checkpoint, a validation): the
  // interval to its next request is no step, and is measured for nothing.
  void not_a_step() { last_ask_ns_ = 0; }
  Iterator& iterator() { return it_; }

  bool searching() const { return searching_; }
  // Finished searches, oldest first (the running one is not among them).
  const std::vector<TuningSearch>& searches() const { return done_; }
  // searches(), and the running one (finished false: what it measured so far, the reader
  // that runs as `chosen`): what a run that ended mid-search reports.
  std::vector<TuningSearch> report() const;
  // Called as each search finishes (the command's header line, its JSON).
  std::function<void(const TuningSearch&)> on_search;

 private:
  void step_done(int64_t step_ns, int64_t wait_ns, int side);
  void begin_search(std::string reason);
  void measure(int64_t step_ns, int64_t wait_ns);
  void close_window(WindowVerdict verdict);
  void start_next_candidate();
  // The reader the search started from, once more, when a challenger was shown faster: the VM's
  // speed drifts by 20% over tens of seconds (docs/PERFORMANCE.md), and a challenger measured
  // later than the incumbent's first window may look faster for that alone; so it must be
  // clearly faster than the incumbent's latest window. nullopt: nothing to confirm.
  std::optional<TuningCandidate> confirmation();
  void finish_search();
  void watch(int64_t step_ns, int64_t wait_ns);
  // This process's CPU time and its live worker processes' (processes:N).
  double cpu_seconds() const;

  Iterator& it_;
  std::vector<TuningCandidate> readers_;
  TunerLimits limits_;
  uint64_t steps_ = 0;  // consumer steps so far
  int64_t last_ask_ns_ = 0, last_wait_ns_ = 0;
  int last_side_ = 0, search_side_ = 0;

  bool searching_ = false;
  bool confirming_ = false;  // the incumbent is measured again (confirmation())
  TuningSearch cur_;
  TuningCandidate current_;  // the candidate being measured
  int64_t search_start_ns_ = 0;
  size_t in_candidate_ = 0;  // steps since the switch to the current candidate
  std::vector<int64_t> step_ns_, wait_ns_;
  double cpu_mark_ = 0;
  int64_t window_start_ns_ = 0;

  uint64_t watch_since_ = 0;  // step of the last search's end
  double chosen_wait_ = 0;
  std::vector<int64_t> watch_step_, watch_wait_;
  std::vector<TuningSearch> done_;
};

}  // namespace stoker
