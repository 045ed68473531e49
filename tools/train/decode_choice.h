// SPDX-License-Identifier: Apache-2.0
// --decode cpu|gpu|auto for `stoker train`: where the loader's images are decoded. auto
// picks the GPU where the CPU path is measured to fall short of a GPU trainer: above 512 px a
// side (on the H200 machine's 16 cores, threads:16 kept the data wait at 0-0.1% at 256 and
// 512 px and left the trainer waiting half the time at 1024 px; docs/PERFORMANCE.md), with
// the cuda backend, a reader in this process, no colour operations, and GPU decode able to
// run here. The choice and its reason go to the run's `#` lines and JSON.
#pragma once

#include <string>
#include <string_view>

#include "loader/loader_config.h"

namespace stoker {

struct DecodeChoice {
  DecodeDevice device = DecodeDevice::cpu;
  std::string reason;  // why, for auto ("auto: 1024 px > 512, cuda backend")
};

// Checks a --decode word: stoker::Error "unknown decode 'x': expected cpu, gpu or auto".
void check_decode_mode(std::string_view mode);

// `mode`: "cpu", "gpu" or "auto" (a usage error otherwise). gpu where it cannot run is an
// error naming why; auto then falls back to cpu, saying why.
DecodeChoice choose_decode(std::string_view mode, const LoaderConfig& lc, std::string_view backend);

}  // namespace stoker
