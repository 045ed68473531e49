// SPDX-License-Identifier: Apache-2.0
// The one way a `stoker` option's value is checked: a CLI11 validator, so that a bad value is
// a usage error (exit 2) whose message names the option and what it accepts. Words go
// through the parser the run itself uses (parsed_by, each_parsed_by), numbers through a range
// (integer_in, number_in). Checks across several options throw stoker::UsageError instead
// (common/error.h).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>

namespace stoker {

// Accepts a value when `parse` returns without throwing; otherwise its stoker::Error message
// (which lists the accepted words) is the usage error.
CLI::Validator parsed_by(std::function<void(const std::string&)> parse, std::string what);

// Every comma-separated item of the value passes `parse`.
CLI::Validator each_parsed_by(std::function<void(const std::string&)> parse, std::string what);

// An integer (no sign, no fraction) in [lo, hi]: "-1" is refused rather than wrapped to
// 2^64 - 1 by an unsigned field.
CLI::Validator integer_in(uint64_t lo, uint64_t hi = UINT64_MAX);

// A number in [lo, hi]; with open_lo, lo itself is refused (a rate above 0).
CLI::Validator number_in(double lo, double hi, bool open_lo = false);

}  // namespace stoker
