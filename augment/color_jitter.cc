// SPDX-License-Identifier: Apache-2.0
#include "augment/color_jitter.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <utility>

#include "common/error.h"

namespace stoker {

namespace {

// Every formula below is written as torchvision 0.14's functional_tensor.py evaluates it on
// a uint8 image: each product and sum rounded to float32 in the same order (the build never
// contracts them into FMAs: x86-64 baseline has none), clamping to [0, 255], then truncation
// by .to(uint8). Keep the order of operations when editing, or pixels move by a level.

// (0.2989 * r + 0.587 * g + 0.114 * b).to(uint8)
inline uint8_t luma(const uint8_t* p) {
  const float l = (0.2989f * float(p[0]) + 0.587f * float(p[1])) + 0.114f * float(p[2]);
  return static_cast<uint8_t>(l);
}

// _blend: (ratio * img1 + (1.0 - ratio) * img2).clamp(0, 255).to(uint8)
inline uint8_t blend(float ratio, float other_ratio, uint8_t x, float other) {
  const float v = ratio * float(x) + other_ratio * other;
  return static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f));
}

void check_rgb(const cv::Mat& rgb) {
  STOKER_CHECK(rgb.type() == CV_8UC3 && rgb.isContinuous());
}

template <typename F>
void each_pixel(cv::Mat& rgb, F&& f) {
  check_rgb(rgb);
  uint8_t* p = rgb.ptr<uint8_t>();
  const size_t n = rgb.total();
  for (size_t i = 0; i < n; ++i, p += 3) f(p);
}

void apply_lut(cv::Mat& rgb, const std::array<uint8_t, 256>& lut) {
  check_rgb(rgb);
  uint8_t* p = rgb.ptr<uint8_t>();
  const size_t n = rgb.total() * 3;
  for (size_t i = 0; i < n; ++i) p[i] = lut[p[i]];
}

}  // namespace

void parse_jitter(const std::string& text, ColorConfig& c) {
  std::array<double, 4> v{};
  size_t start = 0;
  for (int k = 0; k < 4; ++k) {
    const size_t end = text.find(',', start);
    if ((k < 3) != (end != std::string::npos))
      fail("'{}': expected four numbers B,C,S,H (brightness, contrast, saturation, hue)", text);
    const std::string part = text.substr(start, end == std::string::npos ? end : end - start);
    char* stop = nullptr;
    v[k] = std::strtod(part.c_str(), &stop);
    if (part.empty() || *stop != '\0' || !std::isfinite(v[k]))
      fail("'{}': '{}' is not a number", text, part);
    if (v[k] < 0) fail("'{}': '{}' is negative (each part is a non-negative spread)", text, part);
    start = end + 1;
  }
  if (v[3] > 0.5)
    fail("'{}': hue {} is above 0.5 (torchvision draws the hue shift from [-H, H], H <= 0.5)", text,
         v[3]);
  c.brightness = v[0];
  c.contrast = v[1];
  c.saturation = v[2];
  c.hue = v[3];
}

ColorDraw draw_color(const ColorConfig& c, Rng& rng) {
  ColorDraw d;
  if (c.jitter()) {
    // ColorJitter.get_params: a random permutation, then one factor per op in the order
    // brightness, contrast, saturation, hue (Fisher-Yates with our unbiased integers).
    for (int i = 3; i > 0; --i) std::swap(d.order[i], d.order[rng.below(uint64_t(i) + 1)]);
    const auto factor = [&rng](double x) { return rng.uniform(std::max(0.0, 1 - x), 1 + x); };
    if (c.brightness > 0) d.brightness = factor(c.brightness);
    if (c.contrast > 0) d.contrast = factor(c.contrast);
    if (c.saturation > 0) d.saturation = factor(c.saturation);
    if (c.hue > 0) d.hue = rng.uniform(-c.hue, c.hue);
  }
  if (c.grayscale > 0) d.grayscale = rng.bernoulli(c.grayscale);
  return d;
}

void adjust_brightness(cv::Mat& rgb, double factor) {
  // Blended with black: the second term is (1 - f) * 0. A function of the value alone, so
  // one table of the same float32 results.
  const float r = float(factor), o = float(1.0 - factor);
  std::array<uint8_t, 256> lut;
  for (int x = 0; x < 256; ++x) lut[size_t(x)] = blend(r, o, uint8_t(x), 0.0f);
  apply_lut(rgb, lut);
}

void adjust_contrast(cv::Mat& rgb, double factor) {
  // Blended with the mean of the truncated luma. torch sums it in float32: for up to 65793
  // pixels (256x256) the sum is an integer below 2^24, exact there as in our int64; for
  // larger outputs torch's sum may round, which can move the mean by a last bit.
  check_rgb(rgb);
  int64_t sum = 0;
  const uint8_t* q = rgb.ptr<uint8_t>();
  for (size_t i = 0; i < rgb.total(); ++i, q += 3) sum += luma(q);
  const float mean = float(sum) / float(rgb.total());
  const float r = float(factor), o = float(1.0 - factor);
  std::array<uint8_t, 256> lut;
  for (int x = 0; x < 256; ++x) lut[size_t(x)] = blend(r, o, uint8_t(x), mean);
  apply_lut(rgb, lut);
}

void adjust_saturation(cv::Mat& rgb, double factor) {
  const float r = float(factor), o = float(1.0 - factor);
  each_pixel(rgb, [&](uint8_t* p) {
    const float l = float(luma(p));
    for (int c = 0; c < 3; ++c) p[c] = blend(r, o, p[c], l);
  });
}

void adjust_hue(cv::Mat& rgb, double factor) {
  STOKER_CHECK(factor >= -0.5 && factor <= 0.5);
  const float shift = float(factor);
  each_pixel(rgb, [&](uint8_t* p) {
    // _rgb2hsv on x / 255.0
    const float r = float(p[0]) / 255.0f, g = float(p[1]) / 255.0f, b = float(p[2]) / 255.0f;
    const float maxc = std::max({r, g, b}), minc = std::min({r, g, b});
    const bool eqc = maxc == minc;
    const float cr = maxc - minc;
    const float s = cr / (eqc ? 1.0f : maxc);
    const float div = eqc ? 1.0f : cr;
    const float rc = (maxc - r) / div, gc = (maxc - g) / div, bc = (maxc - b) / div;
    const float hr = maxc == r ? bc - gc : 0.0f;
    const float hg = maxc == g && maxc != r ? (2.0f + rc) - bc : 0.0f;
    const float hb = maxc != g && maxc != r ? (4.0f + gc) - rc : 0.0f;
    float h = std::fmod(((hr + hg) + hb) / 6.0f + 1.0f, 1.0f);
    // (h + hue_factor) % 1.0: torch's remainder takes the divisor's sign
    h = std::fmod(h + shift, 1.0f);
    if (h != 0 && h < 0) h += 1.0f;
    // _hsv2rgb
    const float h6 = h * 6.0f;
    const float fi = std::floor(h6);
    const float f = h6 - fi;
    const int i = static_cast<int>(fi) % 6;
    const float v = maxc;
    const float pp = std::clamp(v * (1.0f - s), 0.0f, 1.0f);
    const float qq = std::clamp(v * (1.0f - s * f), 0.0f, 1.0f);
    const float tt = std::clamp(v * (1.0f - s * (1.0f - f)), 0.0f, 1.0f);
    float out[3];
    switch (i) {
      case 0:
        out[0] = v, out[1] = tt, out[2] = pp;
        break;
      case 1:
        out[0] = qq, out[1] = v, out[2] = pp;
        break;
      case 2:
        out[0] = pp, out[1] = v, out[2] = tt;
        break;
      case 3:
        out[0] = pp, out[1] = qq, out[2] = v;
        break;
      case 4:
        out[0] = tt, out[1] = pp, out[2] = v;
        break;
      default:
        out[0] = v, out[1] = pp, out[2] = qq;
        break;
    }
    // (img * 255.0).to(uint8): truncation, every value in [0, 255]
    for (int c = 0; c < 3; ++c) p[c] = static_cast<uint8_t>(out[c] * 255.0f);
  });
}

void to_grayscale(cv::Mat& rgb) {
  each_pixel(rgb, [](uint8_t* p) { p[0] = p[1] = p[2] = luma(p); });
}

void apply_color(const ColorDraw& d, cv::Mat& rgb) {
  for (const int op : d.order) {
    switch (op) {
      case 0:
        if (d.brightness != 1) adjust_brightness(rgb, d.brightness);
        break;
      case 1:
        if (d.contrast != 1) adjust_contrast(rgb, d.contrast);
        break;
      case 2:
        if (d.saturation != 1) adjust_saturation(rgb, d.saturation);
        break;
      default:
        if (d.hue != 0) adjust_hue(rgb, d.hue);
        break;
    }
  }
  if (d.grayscale) to_grayscale(rgb);
}

}  // namespace stoker
