// SPDX-License-Identifier: Apache-2.0
// Colour augmentation on the u8 RGB crop: torchvision's ColorJitter (brightness, contrast,
// saturation, hue in a random order) and RandomGrayscale, computed as torchvision's
// functional ops compute them on uint8 tensors (float32 arithmetic, truncation to uint8), so
// a draw's pixels match torchvision's to a level. The draws come from the caller's Rng, a
// pure function of (seed, epoch, sample). Not the PIL path (which quantises hue to 8 bits).
#pragma once

#include <array>
#include <string>

#include <opencv2/core.hpp>

#include "common/rng.h"

namespace stoker {

// torchvision's ColorJitter(brightness, contrast, saturation, hue) arguments as single
// numbers: a factor is drawn uniformly from [max(0, 1 - x), 1 + x] (hue: [-x, x]); 0 leaves
// that op out. Plus RandomGrayscale's probability. Plain data (worker processes copy it).
struct ColorConfig {
  double brightness = 0, contrast = 0, saturation = 0, hue = 0;
  double grayscale = 0;  // probability of replacing the image by its 3-channel luma
  bool jitter() const { return brightness > 0 || contrast > 0 || saturation > 0 || hue > 0; }
  bool any() const { return jitter() || grayscale > 0; }
};

// One sample's draws, as ColorJitter.get_params makes them: an order of the four ops and
// their factors (an op left out keeps its neutral factor and is skipped).
struct ColorDraw {
  std::array<int, 4> order{0, 1, 2, 3};  // 0 brightness, 1 contrast, 2 saturation, 3 hue
  double brightness = 1, contrast = 1, saturation = 1, hue = 0;
  bool grayscale = false;
};

// Parses "B,C,S,H" (four non-negative numbers, H at most 0.5) into `c`'s jitter fields.
// Throws stoker::Error saying which part is wrong.
void parse_jitter(const std::string& text, ColorConfig& c);

ColorDraw draw_color(const ColorConfig& c, Rng& rng);

// The generator a sample's colour draws come from: its own stream (bit 32 set; attempts stay
// below 2^32) beside the crop's Rng(seed, epoch, index, attempt), so turning colour on
// leaves every crop and flip as it was.
inline Rng color_rng(uint64_t seed, uint64_t epoch, uint32_t index, uint32_t attempt) {
  return Rng(seed, epoch, index, (uint64_t{1} << 32) | attempt);
}

// torchvision.transforms.functional's ops on an HxWx3 uint8 RGB image, in place.
void adjust_brightness(cv::Mat& rgb, double factor);
void adjust_contrast(cv::Mat& rgb, double factor);
void adjust_saturation(cv::Mat& rgb, double factor);
void adjust_hue(cv::Mat& rgb, double factor);  // factor in [-0.5, 0.5]
void to_grayscale(cv::Mat& rgb);               // 3 equal channels

// Applies a draw: the jitter ops in the drawn order, then grayscale.
void apply_color(const ColorDraw& d, cv::Mat& rgb);

}  // namespace stoker
