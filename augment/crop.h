// SPDX-License-Identifier: Apache-2.0
// Where to crop and how large to make it: pure functions of the image size and an Rng
// seeded from (seed, epoch, sample), so any worker computes the same crop. The result is a
// region in full-resolution pixels plus an output size, which is what the decoder needs to
// choose a DCT scale and skip rows before any pixel is decoded.
#pragma once

#include <string>

#include "augment/color_jitter.h"
#include "augment/decoder.h"
#include "augment/resize.h"
#include "common/rng.h"

namespace stoker {

enum class TransformKind {
  random_resized_crop,  // torchvision RandomResizedCrop: random area and aspect, then resize
  random_crop,          // the study's fixed-size window (short side resized up to fit if smaller)
  center_crop,          // evaluation: resize short side to `resize`, take the centre size x size
};

struct TransformConfig {
  TransformKind kind = TransformKind::random_resized_crop;
  int size = 224;                                     // output width (and height if `height` is 0)
  int height = 0;                                     // output height; 0: size (square)
  double scale_lo = 0.08, scale_hi = 1.0;             // random_resized_crop: area fraction
  double ratio_lo = 3.0 / 4.0, ratio_hi = 4.0 / 3.0;  // random_resized_crop: aspect w/h
  int resize = 256;   // center_crop: short side before cropping (at least the larger output side)
  double flip = 0.5;  // probability of a horizontal flip
  ResizeFilter filter = ResizeFilter::fast;  // how the region is resized
  ColorConfig color;  // jitter and grayscale on the resized crop (none by default)

  int out_width() const { return size; }
  int out_height() const { return height > 0 ? height : size; }
};

struct CropPlan {
  Rect region;  // in full-resolution pixels of the source image
  int out_w = 0, out_h = 0;
  bool flip = false;
};

// Parses "rrc" / "random-resized-crop", "crop" / "random-crop", "center" / "center-crop".
TransformKind parse_transform(const std::string& name);
const char* transform_name(TransformKind kind);

CropPlan plan_crop(const TransformConfig& config, int width, int height, Rng& rng);

// torchvision's RandomResizedCrop.get_params: 10 tries, then the centre fallback.
Rect random_resized_crop_rect(int width, int height, double scale_lo, double scale_hi,
                              double ratio_lo, double ratio_hi, Rng& rng);

}  // namespace stoker
