// SPDX-License-Identifier: Apache-2.0
// Tolerant reads of a study or train result (tools/study and tools/train write them;
// docs/FORMATS.md is the contract): a missing, null or mistyped field reads as absent, never
// as an exception, and a renamed key is found under its older name, so a report renders from
// a partial or older result. Not a validator: it does not reject anything.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace stoker::report {

using Json = nlohmann::json;

// j[key], else j[the key's older name] (kOlderNames in study_json.cc: `threads` was
// `workers`, `stage` was `copy`, ...), else null: the one place older results stay readable.
const Json* field(const Json& j, const char* key);

// j[key] as a finite number, if it is one.
std::optional<double> num(const Json& j, const char* key);
double num_or(const Json& j, const char* key, double fallback);
// j[key] as text: strings as they are, numbers printed, anything else `fallback`.
std::string str(const Json& j, const char* key, const std::string& fallback = "");
// j[key] if it is an object/array, else an empty one.
const Json& obj(const Json& j, const char* key);
const Json& arr(const Json& j, const char* key);

// The study's finished cells, and those of them with status "ok" and a wall time.
std::vector<const Json*> cells(const Json& study);
bool ok(const Json& cell);

// Distinct values of cell[key] in first-seen order (the sweep order).
std::vector<std::string> distinct(const std::vector<const Json*>& cells, const char* key);

// A reader's threads (ReaderSpec::threads: N of threads:N and processes:N, uring's T):
// "threads" if present (or "workers", its older name), else the number after ':' (serial: 1).
double reader_threads(const Json& cell);
// "serial", "threads", ...: "reader_kind" if present, else the reader name before ':'.
std::string reader_kind(const Json& cell);

// A cell's run-to-run noise over its repeats (`wall_s_runs`, `stoker study --repeats`):
// (max - min) / median, the median being the cell's `wall_s`. Absent for fewer than two
// runs. The one formula: the conclusions and the table both read it.
std::optional<double> spread(const Json& cell);

// The words' thresholds, one place for the conclusions and the answer. Two times within kSame
// of each other are "the same" (run-to-run noise on a shared machine is a few percent); a cell
// whose consumer waits less than kComputeBound of the time is bound by the consumer (it is fed:
// MLPerf Storage's AU >= 90%).
constexpr double kSame = 0.05;
constexpr double kComputeBound = 0.10;

// A share as whole percent ("<1%" for a small non-zero one).
std::string percent_text(double share);

}  // namespace stoker::report
