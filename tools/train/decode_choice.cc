// SPDX-License-Identifier: Apache-2.0
#include "tools/train/decode_choice.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "train/gpu_decode.h"

namespace stoker {
namespace {

constexpr int kAutoAbovePx = 512;

// Why GPU decode does not go with this run's other options, or empty.
std::string why_not_with(const LoaderConfig& lc, std::string_view backend) {
  if (backend != "cuda") return fmt::format("the {} backend trains on the CPU", backend);
  if (lc.reader.kind == ReaderSpec::Kind::processes)
    return fmt::format("reader {} decodes in other processes", lc.reader.text());
  if (lc.transform.color.any()) return "colour jitter and grayscale run on the CPU only";
  return {};
}

}  // namespace

void check_decode_mode(std::string_view mode) {
  if (mode != "cpu" && mode != "gpu" && mode != "auto")
    fail("unknown decode '{}': expected cpu, gpu or auto", mode);
}

DecodeChoice choose_decode(std::string_view mode, const LoaderConfig& lc,
                           std::string_view backend) {
  if (mode == "cpu") return {DecodeDevice::cpu, "--decode cpu"};
  if (mode == "gpu") {
    if (const std::string why = why_not_with(lc, backend); !why.empty())
      usage_fail("--decode gpu: {}", why);
    if (const std::string why = gpu_decode_unavailable(); !why.empty())
      fail("--decode gpu: {}", why);
    return {DecodeDevice::gpu, "--decode gpu"};
  }
  check_decode_mode(mode);
  const int side = lc.size_schedule.active()
                       ? lc.size_schedule.largest()
                       : std::max(lc.transform.out_width(), lc.transform.out_height());
  if (side <= kAutoAbovePx)
    return {DecodeDevice::cpu, fmt::format("auto: {} px, where the CPU keeps up", side)};
  std::string why = why_not_with(lc, backend);
  if (why.empty()) why = gpu_decode_unavailable();
  if (!why.empty()) return {DecodeDevice::cpu, fmt::format("auto: {} px, but {}", side, why)};
  return {DecodeDevice::gpu, fmt::format("auto: {} px > {}", side, kAutoAbovePx)};
}

}  // namespace stoker
