// SPDX-License-Identifier: Apache-2.0
// Standard normal samples from Stoker's Rng by the Box-Muller transform: the same stream on
// every platform and standard library (std::normal_distribution's is not). Matches torch's
// distribution, not its random stream.
#pragma once

#include <cmath>
#include <numbers>
#include <span>

#include "common/rng.h"

namespace stoker {

// Fills `out` with independent N(0, std^2) samples; two per pair of uniforms.
inline void fill_normal(Rng& rng, double std, std::span<float> out) {
  for (size_t i = 0; i < out.size(); i += 2) {
    const double u1 = 1.0 - rng.uniform();  // (0, 1]: log stays finite
    const double u2 = rng.uniform();
    const double r = std * std::sqrt(-2.0 * std::log(u1));
    const double a = 2.0 * std::numbers::pi * u2;
    out[i] = static_cast<float>(r * std::cos(a));
    if (i + 1 < out.size()) out[i + 1] = static_cast<float>(r * std::sin(a));
  }
}

}  // namespace stoker
