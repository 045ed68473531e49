// SPDX-License-Identifier: Apache-2.0
// What `--reader auto` may choose, built from the host's cores, and the order a search tries
// it in (next_candidate, a pure function of what the search measured so far). Whether a
// candidate can run here (a worker binary, io_uring) is found by trying it (reader_tuner.h
// skips and names those that cannot), never assumed.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "loader/tuning/tuning_choice.h"

namespace stoker {

// serial; threads:N; processes:N; uring:QD:N (QD = 8N: reads in flight for N decoders), for N
// in 1, 2, 4, ..., cores; each at `prefetch`. cores < 1 counts as 1.
std::vector<TuningCandidate> reader_candidates(int cores, size_t prefetch);

// `best`'s reader at prefetch 1 and at twice best.prefetch (at most 8), those that differ
// from best.prefetch; none for serial, which prepares nothing ahead.
std::vector<TuningCandidate> prefetch_candidates(const TuningCandidate& best);

// How a search walks the candidates.
//  - staged (the default): the start (start_candidate). Then, while the best so far
//    (choose_candidate, the start its incumbent) does not wait for data (its data wait at most
//    busy_wait), fewer cores: the start's kind at each smaller count, largest first, then serial,
//    each tried only while the one before it is the reference (reference_of) or shown level with it
//    (a consumer that does not wait gains nothing from a faster reader; one with fewer cores may
//    leave the consumer more CPU, the noisy neighbour). While the best waits: the other kinds at
//    its count, then its reader at twice its prefetch (at most 8), again while that helps. Most
//    candidates tried are near the best, and the worse ones end their windows early
//    (window_verdict), so the search costs little of the run.
//  - full: every reader in order, then the best's prefetch depths (prefetch_candidates):
//    the sweep, for a user who wants every candidate measured.
enum class SearchPlan { staged, full };
const char* search_plan_name(SearchPlan p);
// "staged" or "full"; anything else is a stoker::UsageError listing them.
SearchPlan parse_search_plan(const std::string& text);

// Where every search starts: the first of `readers` with the most cores, threads before the
// other kinds (the default reader, threads:<cpus>).
TuningCandidate start_candidate(const std::vector<TuningCandidate>& readers);
// The reader an auto run's loader starts with: its first search's start on `cores` cores
// (every caller, CLI and Python, so that search begins without a switch).
ReaderSpec auto_start_reader(int cores);
// The incumbent of choose_candidate: `tried`'s index of start_candidate(readers), its latest
// measure where it was measured twice (reader_tuner.h confirms a choice that leaves it);
// SIZE_MAX if it was not tried.
size_t incumbent_of(const std::vector<TuningCandidate>& readers,
                    const std::vector<CandidateMeasure>& tried);

// The search's next candidate over `readers` after `tried` (in the order tried, skipped ones
// included), or nullopt: the search is done.
std::optional<TuningCandidate> next_candidate(const std::vector<TuningCandidate>& readers,
                                              const std::vector<CandidateMeasure>& tried,
                                              SearchPlan plan, const TuningRules& rules);

}  // namespace stoker
