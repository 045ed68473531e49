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

// {"searches": [{"reason", "first_step", "steps", "seconds", "cut_short", "tried": [...],
// "chosen", "why", "kept_previous"}], "chosen"}: the last search's choice.
nlohmann::json tuning_json(const std::vector<TuningSearch>& searches);

}  // namespace stoker
