// SPDX-License-Identifier: Apache-2.0
// `--reader auto`'s core split for the CPU trainer: how many compute threads (oneDNN's and
// SGD's, --threads) the trainer takes from the cores the loader shares with it. The loader's
// own threads are the reader search's (loader/tuning/reader_tuner.h); this is the other half.
//
// Chosen once per run, before its first trained step, as the decode device is: a backend's
// sums may change in their last bits with its thread count, so the split cannot change while
// the run trains (the reader can: every reader gives the same bits). Each candidate is
// measured on scratch: a second backend with that many threads, loaded with the run's start,
// fed by a second loader from the run's position (the batches the run is about to train on,
// read once more), its steps thrown away. The run then trains exactly what `--threads N` with
// the chosen N trains; the checkpoint records it and `--resume` keeps it.
//
// The order (split_order) and the stop (next_split) are pure functions; the decisions are
// the reader search's (loader/tuning/tuning_choice.h): a window's verdict, and the default
// (every core) unless a split is clearly faster, the fewest threads among those shown level.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loader/tuning/reader_tuner.h"

namespace CLI {
class App;
}

namespace stoker {

struct TrainRun;
struct TrainCommand;

// The compute thread counts a search may try, in order: every core first (the default), then
// fewer cores by 1, 2, 4, ... down to half of them (never below 1). A trainer given fewer
// than half its cores is not a split a loader needs. One core: nothing to split.
std::vector<int> split_order(int cpus);

// The share of a run's steps the split's scratch steps may cost at most: a run shorter than
// its search could cost over this share (split_order's candidates, each at most the settling
// steps and a whole window) keeps every core. Scratch steps train nothing, unlike the reader
// search's windows; on a 200-step ResNet-18 run on two cores the search cost more than the
// split could gain (docs/PERFORMANCE.md).
constexpr double kSplitShare = 0.05;

// Why a run of `planned` steps does not search the split ("" when it does): its search could
// cost more than kSplitShare of it.
std::string split_too_costly(int cpus, int64_t planned, const TunerLimits& limits);

// The next count to measure after `tried` (in split_order's order), or none: the search goes
// down while each step down is not clearly behind the fastest so far (its window's verdict),
// and stops at the first that is, or a skipped one, or the end of the order.
std::optional<int> next_split(int cpus, const std::vector<CandidateMeasure>& tried);

// Measures one candidate (its window, against the fastest so far: nullptr for the first) and
// returns what was measured, `skipped` naming why it could not run.
using SplitProbe = std::function<CandidateMeasure(int threads, const CandidateMeasure* fastest)>;

// The search: candidates in next_split's order through `probe`, while `limits.max_seconds` of
// wall time allows; the choice by choose_candidate with the first (every core) as the
// incumbent. `reason`, `steps` (measured steps, settling left out) and `seconds` filled in;
// `chosen` is the choice, or every core when none was measured.
TuningSearch search_core_split(int cpus, const SplitProbe& probe, const TunerLimits& limits);

// The step of `stoker train` (tools/train/train_rank.h), after plan_model, before
// make_trainer: under --reader auto with the CPU backend, one rank, no --threads and a fresh
// run on two cores or more, long enough to pay for it (split_too_costly), searches the split and
// sets the backend's threads to the choice (run.core_split holds the search); a resumed run takes
// the split its checkpoint recorded (core_split), unless
// --threads says otherwise. Says on stderr which split it measures (print_context prints
// the search).
void split_cores(TrainRun& run, TrainCommand& o, const CLI::App& app);

}  // namespace stoker
