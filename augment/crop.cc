// SPDX-License-Identifier: Apache-2.0
#include "augment/crop.h"

#include <algorithm>
#include <cmath>

#include "common/error.h"

namespace stoker {

TransformKind parse_transform(const std::string& name) {
  if (name == "rrc" || name == "random-resized-crop") return TransformKind::random_resized_crop;
  if (name == "crop" || name == "random-crop") return TransformKind::random_crop;
  if (name == "center" || name == "center-crop") return TransformKind::center_crop;
  fail(
      "unknown transform '{}': expected one of random-resized-crop (rrc), random-crop (crop), "
      "center-crop (center)",
      name);
}

const char* transform_name(TransformKind kind) {
  switch (kind) {
    case TransformKind::random_resized_crop:
      return "random-resized-crop";
    case TransformKind::random_crop:
      return "random-crop";
    case TransformKind::center_crop:
      return "center-crop";
  }
  return "?";
}

Rect random_resized_crop_rect(int width, int height, double scale_lo, double scale_hi,
                              double ratio_lo, double ratio_hi, Rng& rng) {
  const double area = static_cast<double>(width) * height;
  const double log_lo = std::log(ratio_lo), log_hi = std::log(ratio_hi);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * rng.uniform(scale_lo, scale_hi);
    const double aspect = std::exp(rng.uniform(log_lo, log_hi));
    // Python's round() is half-to-even, as is std::nearbyint in the default rounding mode.
    const int w = static_cast<int>(std::nearbyint(std::sqrt(target * aspect)));
    const int h = static_cast<int>(std::nearbyint(std::sqrt(target / aspect)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const int y = static_cast<int>(rng.range(0, height - h + 1));
      const int x = static_cast<int>(rng.range(0, width - w + 1));
      return {x, y, w, h};
    }
  }
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < ratio_lo) {
    h = static_cast<int>(std::nearbyint(w / ratio_lo));
  } else if (in_ratio > ratio_hi) {
    w = static_cast<int>(std::nearbyint(h * ratio_hi));
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

namespace {

// torchvision Resize(short): the short side becomes `short_side`, the long one int(scaled).
void resized_dims(int width, int height, int short_side, int& rw, int& rh) {
  if (width <= height) {
    rw = short_side;
    rh = static_cast<int>(static_cast<double>(short_side) * height / width);
  } else {
    rh = short_side;
    rw = static_cast<int>(static_cast<double>(short_side) * width / height);
  }
}

// Maps a window of a resized image (rw x rh) back to source pixels.
Rect to_source(int x, int y, int w, int h, int width, int height, int rw, int rh) {
  const double fx = static_cast<double>(width) / rw, fy = static_cast<double>(height) / rh;
  Rect r;
  r.x = static_cast<int>(std::floor(x * fx));
  r.y = static_cast<int>(std::floor(y * fy));
  r.w = std::clamp(static_cast<int>(std::lround(w * fx)), 1, width - r.x);
  r.h = std::clamp(static_cast<int>(std::lround(h * fy)), 1, height - r.y);
  return r;
}

}  // namespace

CropPlan plan_crop(const TransformConfig& cfg, int width, int height, Rng& rng) {
  const int ow = cfg.out_width(), oh = cfg.out_height();
  STOKER_CHECK(width > 0 && height > 0 && ow > 0 && oh > 0);
  CropPlan plan;
  plan.out_w = ow;
  plan.out_h = oh;
  switch (cfg.kind) {
    case TransformKind::random_resized_crop:
      plan.region = random_resized_crop_rect(width, height, cfg.scale_lo, cfg.scale_hi,
                                             cfg.ratio_lo, cfg.ratio_hi, rng);
      break;
    case TransformKind::random_crop: {
      // An image the window does not fit in is resized up, its short side to the window's
      // larger side (for a square window: its side, as before non-square sizes existed).
      int rw = width, rh = height;
      if (width < ow || height < oh) resized_dims(width, height, std::max(ow, oh), rw, rh);
      const int y = static_cast<int>(rng.range(0, rh - oh + 1));
      const int x = static_cast<int>(rng.range(0, rw - ow + 1));
      plan.region = to_source(x, y, ow, oh, width, height, rw, rh);
      break;
    }
    case TransformKind::center_crop: {
      int rw = 0, rh = 0;
      resized_dims(width, height, std::max({cfg.resize, ow, oh}), rw, rh);
      // torchvision CenterCrop((h, w)): int(round((dim - size) / 2.0)) per axis
      const int y = static_cast<int>(std::nearbyint((rh - oh) / 2.0));
      const int x = static_cast<int>(std::nearbyint((rw - ow) / 2.0));
      plan.region = to_source(x, y, ow, oh, width, height, rw, rh);
      break;
    }
  }
  plan.flip = cfg.flip > 0 && rng.bernoulli(cfg.flip);
  return plan;
}

}  // namespace stoker
