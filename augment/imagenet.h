// SPDX-License-Identifier: Apache-2.0
// ImageNet's per-channel mean and standard deviation on the 0..1 scale, as torchvision's
// Normalize takes them in every ImageNet recipe: the default normalisation of the loader's f32
// output (OutputSpec, augment/collate.h) and of a backend's u8 input (InputSpec,
// train/backend.h), written once.
#pragma once

#include <array>

namespace stoker {

inline constexpr std::array<float, 3> kImagenetMean{0.485f, 0.456f, 0.406f};
inline constexpr std::array<float, 3> kImagenetStd{0.229f, 0.224f, 0.225f};

}  // namespace stoker
