// SPDX-License-Identifier: Apache-2.0
// How `--reader auto`'s searches (loader/tuning/reader_tuner.h) are reported, the same in
// `stoker bench` and `stoker train`: lines for the run's header (each candidate tried with its
// rate, data wait and cores busy, or why it was skipped; the choice and why; what the search
// cost), and the JSON of docs/FORMATS.md ("reader_tuning").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loader/tuning/reader_tuner.h"

namespace stoker {

// "# reader auto: ..." lines, each ending in a newline; `n`: the search's number, from 1.
std::string tuning_lines(const TuningSearch& s, size_t n);

// --reader auto's core split (tools/train/core_split.h): "# core split: ..." lines.
std::string core_split_lines(const TuningSearch& s);

// {"searches": [{"reason", "first_step", "steps", "seconds", "cut_short", "tried": [...],
// "chosen", "why", "kept_previous"}], "chosen"}: the last search's choice.
nlohmann::json tuning_json(const std::vector<TuningSearch>& searches);

// One search's JSON, as in tuning_json's "searches", with "compute_threads": the chosen count
// (each candidate's in its "compute_threads").
nlohmann::json core_split_json(const TuningSearch& s);

}  // namespace stoker
