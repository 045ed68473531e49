// SPDX-License-Identifier: Apache-2.0
// Deterministic synthetic "photographs" for `stoker gen`: multi-scale texture, anti-aliased
// shapes, colour and sensor-like noise, with per-class palette/shape/stripe traits so a small
// CNN can learn the label and JPEGs cost about what real photos cost. Not a realistic scene
// model, and not a benchmark of anything by itself.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>

namespace stoker {

struct SynthParams {
  int width = 0, height = 0;  // output size
  int label = 0;              // class, 0..num_classes-1
  int num_classes = 1;
  uint64_t seed = 0;  // per-image seed: same params -> identical pixels
};

// HxWx3 uint8 in RGB order (not BGR).
cv::Mat render_photo_like(const SynthParams& p);

}  // namespace stoker
