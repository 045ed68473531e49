// SPDX-License-Identifier: Apache-2.0
#include "loader/sampler/size_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/error.h"

namespace stoker {

namespace {

constexpr int kMinSide = 32, kMaxSide = 8192;

// Ties to even, as np.round (the default rounding mode; std::round would round ties away).
int round_to_32(double pixels) {
  return static_cast<int>(std::nearbyint(pixels / 32.0)) * 32;
}

// A non-negative decimal integer filling all of `s`, or -1.
int64_t whole_number(const std::string& s) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  return std::stoll(s);
}

// "HxW" (or "HXW"): two whole numbers around an x, as --size takes them.
bool is_height_by_width(const std::string& s) {
  const size_t x = s.find_first_of("xX");
  return x != std::string::npos && whole_number(s.substr(0, x)) >= 0 &&
         whole_number(s.substr(x + 1)) >= 0;
}

}  // namespace

int SizeSchedule::at(uint64_t epoch, uint64_t step) const {
  const double x = double(unit == Unit::epochs ? epoch : step);
  if (x <= double(start)) return min;
  if (x >= double(end)) return max;
  // np.interp's arithmetic: slope * (x - xp[j]) + fp[j].
  const double slope = double(max - min) / double(end - start);
  return round_to_32(slope * (x - double(start)) + double(min));
}

int SizeSchedule::largest() const {
  return end > start + 1 ? std::max(max, round_to_32(double(max))) : max;
}

std::string SizeSchedule::text() const {
  if (!active()) return "";
  if (min == max && start == 0 && end == 0) return std::to_string(max);
  return fmt::format("{}:{}@{}{}-{}", min, max, unit == Unit::steps ? "steps:" : "", start, end);
}

SizeSchedule parse_size_schedule(const std::string& text, const char* option) {
  const auto bad = [&](const std::string& why) {
    usage_fail(
        "{} '{}': {} (expected MIN:MAX@A-B, MIN px until epoch A then a ramp to MAX px by "
        "epoch B, or MIN:MAX@steps:A-B in optimiser steps, or N; sides {}..{})",
        option, text, why, kMinSide, kMaxSide);
  };
  const auto side = [&](const std::string& s, const char* what) {
    // Readers, the batch pool and the backends follow one side per step: a schedule is
    // square, and someone who wrote HxW hears that rather than "not a whole number".
    if (is_height_by_width(s))
      bad(
          fmt::format("{} '{}' is HxW, but a schedule's sizes are square, one side N for N x N "
                      "(a non-square output is a fixed --size HxW)",
                      what, s));
    const int64_t v = whole_number(s);
    if (v < 0) bad(fmt::format("{} '{}' is not a whole number", what, s));
    if (v < kMinSide || v > kMaxSide)
      bad(fmt::format("{} {} is outside {}..{}", what, v, kMinSide, kMaxSide));
    return int(v);
  };
  SizeSchedule s;
  const size_t at = text.find('@');
  if (at == std::string::npos) {
    if (text.find(':') != std::string::npos) bad("a ramp needs @A-B, where it starts and ends");
    s.min = s.max = side(text, "the size");
    return s;
  }
  const std::string sizes = text.substr(0, at);
  std::string range = text.substr(at + 1);
  const size_t colon = sizes.find(':');
  if (colon == std::string::npos) bad("MIN:MAX before the @");
  s.min = side(sizes.substr(0, colon), "MIN");
  s.max = side(sizes.substr(colon + 1), "MAX");
  if (s.min > s.max) bad(fmt::format("MIN {} is larger than MAX {}", s.min, s.max));
  for (const auto& [word, unit] : {std::pair{"steps:", SizeSchedule::Unit::steps},
                                   std::pair{"epochs:", SizeSchedule::Unit::epochs}})
    if (range.starts_with(word)) {
      s.unit = unit;
      range.erase(0, std::string(word).size());
    }
  const size_t dash = range.find('-');
  if (dash == std::string::npos) bad("A-B after the @ (where the ramp starts and ends)");
  s.start = whole_number(range.substr(0, dash));
  s.end = whole_number(range.substr(dash + 1));
  if (s.start < 0 || s.end < 0) bad(fmt::format("'{}' is not two whole numbers A-B", range));
  if (s.start > s.end)
    bad(fmt::format("the ramp starts at {} after it ends at {}", s.start, s.end));
  return s;
}

}  // namespace stoker
