// SPDX-License-Identifier: Apache-2.0
#include "tools/gen/synth_image.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/rng.h"

namespace stoker {
namespace {

constexpr float kPi = 3.14159265358979f;
constexpr int kShapeKinds = 4;  // ellipse, box, polygon, star
constexpr int kLut = 256;       // stripe profile samples per period

// Traits shared by every image of a class: they depend on the label and class count, not on
// the image seed, and give a classifier something to learn.
struct ClassStyle {
  float hue[3], sat[3], val[3];  // background, clutter, subject
  int shape;                     // dominant shape kind of the subject
  float stripe_angle;            // radians
  float stripe_period;           // fraction of the short side
  float roughness;               // octave persistence of the smooth texture
  float grain, grain_gain;       // persistence and strength of the fine detail
};

ClassStyle class_style(int label, int num_classes) {
  Rng rng(hash_key(0x73747966ULL, static_cast<uint64_t>(label)));
  ClassStyle s;
  // Evenly spaced hues separate few-class datasets best; shape and stripe angle cycle with
  // other periods so classes with neighbouring hues still differ in form.
  const float h0 = (label + 0.5f) / num_classes;
  static constexpr float kAccent[] = {0.5f, 0.33f, 0.67f, 0.2f, 0.8f};
  s.hue[0] = h0;
  s.hue[1] = h0 + static_cast<float>(rng.uniform(0.05, 0.13) * (rng.bernoulli(0.5) ? 1 : -1));
  s.hue[2] = h0 + kAccent[label % 5];
  s.sat[0] = static_cast<float>(rng.uniform(0.2, 0.45));
  s.sat[1] = static_cast<float>(rng.uniform(0.3, 0.6));
  s.sat[2] = static_cast<float>(rng.uniform(0.55, 0.85));
  s.val[0] = static_cast<float>(rng.uniform(0.5, 0.75));
  s.val[1] = static_cast<float>(rng.uniform(0.3, 0.6));
  s.val[2] = static_cast<float>(rng.uniform(0.6, 0.9));
  s.shape = label % kShapeKinds;
  s.stripe_angle = static_cast<float>((label * 3) % 8) * kPi / 8;
  s.stripe_period = static_cast<float>(rng.uniform(0.04, 0.1));
  s.roughness = static_cast<float>(rng.uniform(0.5, 0.6));
  s.grain = static_cast<float>(rng.uniform(0.7, 0.85));
  s.grain_gain = static_cast<float>(rng.uniform(1.2, 2.0));
  return s;
}

float uniformf(Rng& rng, float lo, float hi) {
  return static_cast<float>(rng.uniform(lo, hi));
}

// exp(v) to first order on either side of 0: always positive, symmetric in log space (so
// texture darkens and brightens alike, without black holes) and far cheaper than expf.
inline float soft_exp(float v) {
  return (1 + std::max(v, 0.0f)) / (1 + std::max(-v, 0.0f));
}

cv::Vec3f hsv_to_rgb(float h, float s, float v) {
  h = (h - std::floor(h)) * 6;
  const int i = static_cast<int>(h) % 6;
  const float f = h - std::floor(h);
  const float p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  switch (i) {
    case 0:
      return {v, t, p};
    case 1:
      return {q, v, p};
    case 2:
      return {p, v, t};
    case 3:
      return {p, q, v};
    case 4:
      return {t, p, v};
    default:
      return {v, p, q};
  }
}

// Adds uniform noise in [-amp, amp) to every element, two values per 64-bit draw. With a
// mask, each element's amplitude is scaled by clamp(bias + slope * its current value, 0, 1).
void add_noise(Rng& rng, cv::Mat& m, float amp, float bias = 1, float slope = 0) {
  float* p = m.ptr<float>();
  const size_t n = m.total();
  const float scale = 2 * amp * 0x1.0p-24f;
  auto add = [&](float& v, uint64_t bits) {
    v += (static_cast<float>(bits) * scale - amp) * std::clamp(bias + slope * v, 0.0f, 1.0f);
  };
  for (size_t i = 0; i < n; i += 2) {
    const uint64_t r = rng.next();
    add(p[i], r >> 40);
    if (i + 1 < n) add(p[i + 1], (r >> 8) & 0xffffff);
  }
}

// Grid for octave cells of `cell` pixels; one-pixel cells are the output grid itself.
cv::Size grid_size(cv::Size size, float cell) {
  if (cell <= 1) return size;
  return {static_cast<int>(std::ceil(size.width / cell)) + 2,
          static_cast<int>(std::ceil(size.height / cell)) + 2};
}

// How octave amplitudes fall from coarse to fine. Each octave is `persistence` times weaker
// than the one twice as coarse: 0.5 is the 1/f amplitude spectrum of natural images. Octaves
// with cells of `split` pixels or less are "grain", normalised and scaled separately, and
// masked by clamp(bias + slope * value so far, 0, 1) so they land in some regions only.
struct Spectrum {
  float coarsest = 2;  // cells across the short side in the first octave
  float persistence = 0.5f;
  float split = 0;  // no grain by default
  float grain_persistence = 0.5f, grain_gain = 0, bias = 1, slope = 0;
};

// Sum of octaves of upscaled random grids down to one-pixel cells: zero mean, standard
// deviation about 1 for the smooth part and grain_gain for the grain. Growing one accumulator
// level by level costs about one full-size resize and buffer whatever the octave count.
cv::Mat fractal(Rng& rng, cv::Size size, const Spectrum& sp) {
  const float top = static_cast<float>(std::min(size.width, size.height)) / sp.coarsest;
  std::vector<float> cells;  // finest first
  for (float cell = 1; cells.empty() || cell <= top; cell *= 2) cells.push_back(cell);
  float power = 0, grain_power = 0, amp = 1, grain_amp = 1;
  for (float cell : cells) {
    if (cell > sp.split) {
      power += amp * amp;
      amp *= sp.persistence;
    } else {
      grain_power += grain_amp * grain_amp;
      grain_amp *= sp.grain_persistence;
    }
  }
  // Uniform noise in [-1, 1) has standard deviation 0.58.
  amp = 1.7f / std::sqrt(std::max(power, 1.0f));
  grain_amp = sp.grain_gain * 1.7f / std::sqrt(std::max(grain_power, 1.0f));
  cv::Mat acc = cv::Mat::zeros(grid_size(size, cells.back()), CV_32F);
  for (auto cell = cells.rbegin(); cell != cells.rend(); ++cell) {
    if (acc.size() != grid_size(size, *cell)) {
      cv::resize(acc, acc, grid_size(size, *cell), 0, 0, cv::INTER_CUBIC);
    }
    if (*cell > sp.split) {
      add_noise(rng, acc, amp);
      amp *= sp.persistence;
    } else {
      add_noise(rng, acc, grain_amp, sp.bias, sp.slope);
      grain_amp *= sp.grain_persistence;
    }
  }
  return acc;
}

// Sensor-like noise: mostly luminance, a little chroma. Triangular noise from byte pairs is
// cheap and close enough to Gaussian once JPEG has transformed it.
struct Sensor {
  float luma = 0, chroma = 0;  // gains on raw byte noise
  void add(Rng& rng, float* v) const {
    const uint64_t r = rng.next();
    const float base =
        static_cast<float>(static_cast<int>((r & 0xff) + ((r >> 8) & 0xff)) - 255) * luma -
        128 * chroma;
    v[0] += base + static_cast<float>((r >> 16) & 0xff) * chroma;
    v[1] += base + static_cast<float>((r >> 32) & 0xff) * chroma;
    v[2] += base + static_cast<float>(r >> 56) * chroma;
  }
};

// Outline of one shape around the origin, radius ~r, before rotation and translation.
std::vector<cv::Point2f> outline(int kind, float r, float aspect, Rng& rng) {
  std::vector<cv::Point2f> pts;
  switch (kind) {
    case 0:  // ellipse
      for (int i = 0; i < 48; ++i) {
        const float a = 2 * kPi * i / 48;
        pts.emplace_back(r * std::cos(a), r * aspect * std::sin(a));
      }
      break;
    case 1:  // box
      pts = {{-r, -r * aspect}, {r, -r * aspect}, {r, r * aspect}, {-r, r * aspect}};
      break;
    case 2: {  // polygon with jittered vertices
      const int n = static_cast<int>(rng.range(3, 7));
      for (int i = 0; i < n; ++i) {
        const float a = 2 * kPi * (i + uniformf(rng, -0.2f, 0.2f)) / n;
        pts.emplace_back(r * std::cos(a), r * aspect * std::sin(a));
      }
      break;
    }
    default: {  // star
      const int n = static_cast<int>(rng.range(5, 9));
      const float inner = uniformf(rng, 0.35f, 0.6f);
      for (int i = 0; i < 2 * n; ++i) {
        const float a = kPi * i / n, rr = (i % 2 ? inner : 1.0f) * r;
        pts.emplace_back(rr * std::cos(a), rr * aspect * std::sin(a));
      }
    }
  }
  return pts;
}

struct Paint {
  cv::Vec3f colour;      // 0..255
  float texture = 0.3f;  // gain of the shared luminance texture inside the shape
  float shade = 0.2f;    // strength of a linear light gradient across the shape
  float stripes = 0;     // stripe contrast, 0 for none
  float stripe_angle = 0, stripe_period = 1;
};

// Draws one anti-aliased shape into `rgb`: the coverage mask comes from fillPoly with
// LINE_AA, the fill is the colour modulated by texture, shading and stripes, plus noise.
void draw_shape(cv::Mat& rgb, const cv::Mat& tex, const std::vector<cv::Point2f>& local,
                cv::Point2f centre, float angle, const Paint& paint, const Sensor& sensor,
                Rng& rng) {
  const float ca = std::cos(angle), sa = std::sin(angle);
  std::vector<cv::Point2f> pts;
  for (const auto& q : local) {
    pts.emplace_back(centre.x + q.x * ca - q.y * sa, centre.y + q.x * sa + q.y * ca);
  }
  const cv::Rect roi = (cv::boundingRect(pts) + cv::Size(2, 2) - cv::Point(1, 1)) &
                       cv::Rect(0, 0, rgb.cols, rgb.rows);
  if (roi.empty()) return;
  constexpr int kShift = 4;  // sub-pixel vertices keep anti-aliased edges smooth
  std::vector<cv::Point> fixed;
  for (const auto& q : pts) {
    fixed.emplace_back(cvRound((q.x - roi.x) * (1 << kShift)),
                       cvRound((q.y - roi.y) * (1 << kShift)));
  }
  cv::Mat mask = cv::Mat::zeros(roi.size(), CV_8U);
  cv::fillPoly(mask, std::vector<std::vector<cv::Point>>{fixed}, cv::Scalar(255), cv::LINE_AA,
               kShift);

  // Stripes as a lookup over a squashed sine so they have crisp-but-not-aliased edges.
  float lut[kLut];
  for (int i = 0; i < kLut; ++i) {
    lut[i] = paint.stripes * std::tanh(2.5f * std::sin(2 * kPi * i / kLut)) / std::tanh(2.5f);
  }
  const float sc = std::cos(paint.stripe_angle), ss = std::sin(paint.stripe_angle);
  const float per_px = kLut / paint.stripe_period;
  const float phase = uniformf(rng, 0, kLut);
  const float light = uniformf(rng, 0, 2 * kPi);
  const float extent = std::max(1.0f, std::max(roi.width, roi.height) * 0.5f);
  const float gx = paint.shade * std::cos(light) / extent;
  const float gy = paint.shade * std::sin(light) / extent;

  for (int y = 0; y < roi.height; ++y) {
    const uint8_t* m = mask.ptr<uint8_t>(y);
    uint8_t* out = rgb.ptr<uint8_t>(roi.y + y) + 3 * roi.x;
    // Read the texture point-mirrored so the shape does not look like a window onto the
    // background texture behind it.
    const float* t = tex.ptr<float>(rgb.rows - 1 - roi.y - y) + (rgb.cols - 1 - roi.x);
    const float dy = y - roi.height * 0.5f;
    for (int x = 0; x < roi.width; ++x) {
      if (!m[x]) continue;
      const float dx = x - roi.width * 0.5f;
      const int idx = static_cast<int>((dx * sc + dy * ss) * per_px + phase + 1e6f) & (kLut - 1);
      const float k = soft_exp(paint.texture * t[-x]) * (1 + gx * dx + gy * dy) * (1 + lut[idx]);
      float v[3] = {paint.colour[0] * k, paint.colour[1] * k, paint.colour[2] * k};
      sensor.add(rng, v);
      const float a = m[x] * (1.0f / 255);
      for (int c = 0; c < 3; ++c) {
        out[3 * x + c] = cv::saturate_cast<uint8_t>(out[3 * x + c] + (v[c] - out[3 * x + c]) * a);
      }
    }
  }
}

}  // namespace

cv::Mat render_photo_like(const SynthParams& p) {
  const int w = std::max(p.width, 1), h = std::max(p.height, 1);
  const int n = std::max(p.num_classes, 1);
  const int label = ((p.label % n) + n) % n;
  const ClassStyle style = class_style(label, n);
  Rng rng(hash_key(p.seed, static_cast<uint64_t>(label), 0x70686f746fULL));
  const cv::Size size(w, h);
  const float side = static_cast<float>(std::min(w, h));

  // Palette: the class colours with a little per-image jitter, like lighting and white
  // balance varying between photographs of the same kind of thing.
  const float exposure = 255 * uniformf(rng, 0.8f, 1.15f);
  cv::Vec3f palette[3];
  for (int i = 0; i < 3; ++i) {
    palette[i] = hsv_to_rgb(style.hue[i] + uniformf(rng, -0.025f, 0.025f),
                            std::clamp(style.sat[i] + uniformf(rng, -0.1f, 0.1f), 0.0f, 1.0f),
                            style.val[i] * exposure);
  }
  Sensor sensor;
  const float sigma = uniformf(rng, 2.5f, 4.5f);  // grey levels, luminance
  sensor.luma = sigma / 104.5f;                   // std of the sum of two uniform bytes
  sensor.chroma = 0.25f * sigma / 73.9f;          // std of one uniform byte

  // Low-frequency colour and illumination at 1/8 size: it has no fine detail to lose.
  const cv::Size small(std::max(2, w / 8), std::max(2, h / 8));
  const cv::Mat mix = fractal(rng, small, {.coarsest = 1.5f});
  const cv::Mat glow = fractal(rng, small, {.coarsest = 1});
  cv::Mat colour(small, CV_32FC3);
  const float light = uniformf(rng, 0, 2 * kPi);
  const float lx = 0.35f * std::cos(light) / small.width;
  const float ly = 0.35f * std::sin(light) / small.height;
  for (int y = 0; y < small.height; ++y) {
    for (int x = 0; x < small.width; ++x) {
      const float t = std::clamp(0.5f + 0.45f * mix.at<float>(y, x), 0.0f, 1.0f);
      const float s = t * t * (3 - 2 * t);
      const float lit = 1 + lx * (x - small.width * 0.5f) + ly * (y - small.height * 0.5f) +
                        0.12f * glow.at<float>(y, x);
      colour.at<cv::Vec3f>(y, x) = (palette[0] * (1 - s) + palette[1] * s) * lit;
    }
  }

  // Luminance texture in log-brightness units: smooth 1/f octaves (clouds, shading) down to
  // 1/40 of the short side, then rougher grain (foliage, gravel, fur) in some regions only;
  // photographs mix flat and busy areas, and the busy ones carry most of a JPEG's bits.
  const cv::Mat tex = fractal(rng, size,
                              {.coarsest = 2.5f,
                               .persistence = style.roughness,
                               .split = side / 40,
                               .grain_persistence = style.grain,
                               .grain_gain = style.grain_gain,
                               .bias = uniformf(rng, 0.2f, 0.6f),
                               .slope = uniformf(rng, -1.0f, 1.0f)});
  // Background: colour times texture plus noise, straight into the 8-bit output. OpenCV
  // does the horizontal half of the bilinear upscale and rows are blended here, so no
  // full-size float colour image is ever stored (page faults on big fresh buffers cost as
  // much as the arithmetic).
  cv::Mat wide;
  cv::resize(colour, wide, cv::Size(w, small.height), 0, 0, cv::INTER_LINEAR);
  const float bg_texture = uniformf(rng, 0.2f, 0.4f);
  const float ry = static_cast<float>(small.height) / h;
  cv::Mat rgb(size, CV_8UC3);
  std::vector<float> k(w), row(3 * w);
  for (int y = 0; y < h; ++y) {
    const float sy = std::max(0.0f, (y + 0.5f) * ry - 0.5f);
    const int y0 = std::min(static_cast<int>(sy), small.height - 1);
    const float fy = sy - y0;
    const float* a = wide.ptr<float>(y0);
    const float* b = wide.ptr<float>(std::min(y0 + 1, small.height - 1));
    const float* t = tex.ptr<float>(y);
    // Simple separate loops, so that (at -O3) only the random draws stay scalar.
    for (int x = 0; x < w; ++x) k[x] = soft_exp(bg_texture * t[x]);
    for (int i = 0; i < 3 * w; ++i) row[i] = a[i] + (b[i] - a[i]) * fy;
    for (int x = 0; x < w; ++x) {
      float* v = &row[3 * x];
      v[0] *= k[x];
      v[1] *= k[x];
      v[2] *= k[x];
      sensor.add(rng, v);
    }
    cv::Mat(1, 3 * w, CV_32F, row.data()).convertTo(cv::Mat(1, 3 * w, CV_8U, rgb.ptr(y)), CV_8U);
  }

  // Clutter behind the subject: mixed kinds in the background/clutter colours, many small.
  const int clutter = static_cast<int>(rng.range(4, 12));
  for (int i = 0; i < clutter; ++i) {
    const int kind = rng.bernoulli(0.4) ? style.shape : static_cast<int>(rng.below(kShapeKinds));
    Paint paint;
    paint.colour = palette[rng.below(2)] * uniformf(rng, 0.6f, 1.3f);
    paint.texture = uniformf(rng, 0.1f, 0.5f);
    const float r = side * std::exp(uniformf(rng, std::log(0.03f), std::log(0.25f)));
    const auto shape = outline(kind, r, uniformf(rng, 0.4f, 1), rng);
    const cv::Point2f at(uniformf(rng, 0, static_cast<float>(w)),
                         uniformf(rng, 0, static_cast<float>(h)));
    draw_shape(rgb, tex, shape, at, uniformf(rng, 0, 2 * kPi), paint, sensor, rng);
  }

  // The subject: the class's shape, accent colour and stripe orientation, roughly centred
  // like the object of an ImageNet photograph.
  Paint paint;
  paint.colour = palette[2];
  paint.texture = uniformf(rng, 0.15f, 0.35f);
  paint.shade = uniformf(rng, 0.15f, 0.35f);
  paint.stripes = uniformf(rng, 0.2f, 0.4f);
  paint.stripe_angle = style.stripe_angle + uniformf(rng, -0.15f, 0.15f);
  paint.stripe_period = side * style.stripe_period * uniformf(rng, 0.8f, 1.25f);
  const auto shape =
      outline(style.shape, side * uniformf(rng, 0.2f, 0.36f), uniformf(rng, 0.6f, 1), rng);
  const cv::Point2f at(w * uniformf(rng, 0.35f, 0.65f), h * uniformf(rng, 0.35f, 0.65f));
  draw_shape(rgb, tex, shape, at, uniformf(rng, -0.4f, 0.4f), paint, sensor, rng);
  return rgb;
}

}  // namespace stoker
