// SPDX-License-Identifier: Apache-2.0
#include "tools/options/option_checks.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "common/error.h"

namespace stoker {

CLI::Validator parsed_by(std::function<void(const std::string&)> parse, std::string what) {
  return CLI::Validator(
      [parse = std::move(parse)](std::string& value) -> std::string {
        try {
          parse(value);
        } catch (const Error& e) {
          return e.what();
        }
        return {};
      },
      std::move(what));
}

CLI::Validator each_parsed_by(std::function<void(const std::string&)> parse, std::string what) {
  return CLI::Validator(
      [parse = std::move(parse)](std::string& value) -> std::string {
        size_t begin = 0;
        while (true) {
          const size_t comma = value.find(',', begin);
          const std::string item = value.substr(begin, comma - begin);
          try {
            parse(item);
          } catch (const Error& e) {
            return e.what();
          }
          if (comma == std::string::npos) return {};
          begin = comma + 1;
        }
      },
      std::move(what));
}

namespace {

std::string number_text(double v) {
  return fmt::format("{:g}", v);
}

}  // namespace

CLI::Validator integer_in(uint64_t lo, uint64_t hi) {
  // A bound that only the field's type sets (INT64_MAX, UINT64_MAX) is not worth printing.
  const bool unbounded = hi >= uint64_t(INT64_MAX);
  const std::string accepted = unbounded ? fmt::format("an integer >= {}", lo)
                                         : fmt::format("an integer from {} to {}", lo, hi);
  return CLI::Validator(
      [lo, hi, accepted](std::string& value) -> std::string {
        uint64_t v = 0;
        const char* end = value.data() + value.size();
        const auto [ptr, ec] = std::from_chars(value.data(), end, v);
        if (value.empty() || ec != std::errc() || ptr != end || v < lo || v > hi)
          return fmt::format("'{}' is not {}", value, accepted);
        return {};
      },
      unbounded ? fmt::format("INT>={}", lo) : fmt::format("INT in {}..{}", lo, hi));
}

CLI::Validator number_in(double lo, double hi, bool open_lo) {
  const std::string accepted =
      fmt::format("a number {} {}{}", open_lo ? ">" : ">=", number_text(lo),
                  std::isinf(hi) ? "" : fmt::format(" and <= {}", number_text(hi)));
  return CLI::Validator(
      [lo, hi, open_lo, accepted](std::string& value) -> std::string {
        double v = 0;
        const char* end = value.data() + value.size();
        const auto [ptr, ec] = std::from_chars(value.data(), end, v);
        if (value.empty() || ec != std::errc() || ptr != end || std::isnan(v) || v < lo ||
            (open_lo && v == lo) || v > hi)
          return fmt::format("'{}' is not {}", value, accepted);
        return {};
      },
      fmt::format("NUMBER {}{}", open_lo ? ">" : ">=", number_text(lo)));
}

}  // namespace stoker
