// SPDX-License-Identifier: Apache-2.0
#include "train/emulated_accelerator.h"

#include <charconv>
#include <cmath>
#include <thread>

#include "common/clock.h"
#include "common/error.h"

namespace stoker {

void EmulatedAccelerator::compute(size_t images) const {
  const int64_t until = now_ns() + compute_ns(images);
  constexpr int64_t kSpin = 200'000;
  const int64_t sleep = until - now_ns() - kSpin;
  if (sleep > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(sleep));
  while (now_ns() < until) {
  }
}

namespace {

bool parse_double(std::string_view s, double& v) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && v > 0 && std::isfinite(v);
}

bool parse_time(std::string_view s, double& seconds) {
  for (const auto& [suffix, scale] : {std::pair{"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}}) {
    const std::string_view suf(suffix);
    if (s.size() > suf.size() && s.substr(s.size() - suf.size()) == suf) {
      double v = 0;
      if (!parse_double(s.substr(0, s.size() - suf.size()), v)) return false;
      seconds = v * scale;
      return true;
    }
  }
  return false;
}

}  // namespace

EmulatedAccelerator parse_emulation(const std::string& spec) {
  EmulatedAccelerator e;
  e.spec = spec;
  // MLPerf Storage's ResNet-50 workload on an H100: a batch of 400 takes 0.224 s.
  if (spec == "resnet50-h100") {
    e.seconds_per_image = 0.224 / 400;
    return e;
  }
  std::string_view s(spec);
  // "1786img/s" holds a slash too: the rate's unit is taken off before looking for T/N.
  const bool rate_unit = s.size() > 5 && s.substr(s.size() - 5) == "img/s";
  if (rate_unit) s.remove_suffix(5);
  double v = 0;
  if (const size_t slash = s.find('/'); slash != std::string_view::npos) {
    double t = 0, n = 0;
    if (!rate_unit && parse_time(s.substr(0, slash), t) && parse_double(s.substr(slash + 1), n)) {
      e.seconds_per_image = t / n;
      return e;
    }
  } else if (parse_double(s, v)) {
    e.seconds_per_image = 1.0 / v;
    return e;
  }
  fail(
      "--emulate '{}': expected the preset resnet50-h100, a rate in images/s "
      "(1786 or 1786img/s), or a time per N images (224ms/400)",
      spec);
}

}  // namespace stoker
