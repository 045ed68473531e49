// SPDX-License-Identifier: Apache-2.0
// Peaks per GPU, dense, from NVIDIA's datasheets (TFLOP/s; "sparsity" figures halved where
// the datasheet gives only those): f16/bf16 tensor, tf32 tensor, f32 FMA.
#include "train/device_peak.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace stoker {
namespace {

struct Row {
  std::string_view name;  // a substring of cudaDeviceProp::name
  double f16, tf32, f32;  // TFLOP/s
  std::string_view board;
};

// The first row whose name CUDA's name contains: so "GH200" before "H200", "H100 PCIe" before
// "H100", "A100" before "A10", "L40S" and "L40" before "L4".
constexpr std::array kPeaks = {
    Row{"GB200", 2500, 1250, 80, "GB200"},
    Row{"B200", 2250, 1100, 80, "B200 (HGX)"},
    Row{"GH200", 989.4, 494.7, 66.9, "GH200"},
    Row{"H200 NVL", 835.5, 417.5, 60, "H200 NVL"},
    Row{"H200", 989.4, 494.7, 66.9, "H200 SXM"},
    Row{"H100 PCIe", 756.5, 378, 51.2, "H100 PCIe"},
    Row{"H100 NVL", 835.5, 417.5, 60, "H100 NVL"},
    Row{"H100", 989.4, 494.7, 66.9, "H100 SXM"},
    Row{"A100", 312, 156, 19.5, "A100"},
    Row{"L40S", 362.1, 183, 91.6, "L40S"},
    Row{"L40", 181, 90.5, 90.5, "L40"},
    Row{"L4", 121, 60, 30.3, "L4"},
    Row{"A10", 125, 62.5, 31.2, "A10"},
    Row{"V100", 125, 15.7, 15.7, "V100 SXM2 (no TF32: f32 FMA)"},
};

double pick(const Row& r, Precision p) {
  switch (p) {
    case Precision::f16:
    case Precision::bf16:
      return r.f16;
    case Precision::tf32:
      return r.tf32;
    case Precision::f32:
      return r.f32;
  }
  return r.f16;
}

std::string_view kind(Precision p) {
  return p == Precision::f32 ? "f32 FMA, no tensor cores" : "dense tensor cores";
}

}  // namespace

DevicePeak device_peak(std::string_view device_name, Precision precision) {
  for (const Row& r : kPeaks)
    if (!device_name.empty() && device_name.find(r.name) != std::string_view::npos)
      return {1e12 * pick(r, precision),
              fmt::format("{} {} peak, {}", r.board, precision_name(precision), kind(precision))};
  const Row& top = *std::max_element(kPeaks.begin(), kPeaks.end(), [&](const Row& a, const Row& b) {
    return pick(a, precision) < pick(b, precision);
  });
  return {1e12 * pick(top, precision),
          fmt::format("'{}' is not in the table: the largest {} peak of any GPU in it ({}, {})",
                      device_name, precision_name(precision), top.board, kind(precision))};
}

RateCheck check_rate(double images_per_s, double flop_per_image, const DevicePeak& peak) {
  RateCheck c;
  c.peak = peak;
  c.implied_flops = images_per_s * flop_per_image;
  c.plausible = !(c.implied_flops > peak.flops) || peak.flops <= 0;
  if (!c.plausible)
    c.message = fmt::format(
        "measurement error: {:.1f} img/s x {:.2f} GFLOP per image = {:.1f} TFLOP/s, above the "
        "device's peak of {:.1f} TFLOP/s ({}); the step times cannot be the device's (hint: a "
        "host's enqueue time, or phases the device clock did not cover)",
        images_per_s, flop_per_image / 1e9, c.implied_flops / 1e12, peak.flops / 1e12, peak.basis);
  return c;
}

}  // namespace stoker
