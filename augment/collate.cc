// SPDX-License-Identifier: Apache-2.0
#include "augment/collate.h"

#include <cstring>
#include <vector>

#include "augment/row_kernels.h"
#include "common/error.h"

namespace stoker {

DType parse_dtype(const std::string& s) {
  if (s == "f32" || s == "float" || s == "float32") return DType::f32;
  if (s == "u8" || s == "uint8") return DType::u8;
  fail("unknown output type '{}': expected f32 (normalised float32) or u8 (raw uint8)", s);
}

Layout parse_layout(const std::string& s) {
  if (s == "nchw" || s == "NCHW") return Layout::nchw;
  if (s == "nhwc" || s == "NHWC") return Layout::nhwc;
  fail("unknown layout '{}': expected nchw or nhwc", s);
}

Normalizer::Normalizer(const OutputSpec& s) : spec(s) {
#if defined(__x86_64__) && defined(__GNUC__)
  // The fused form pays only where the CPU multiplies and adds in one instruction.
  static const bool has_fma = __builtin_cpu_supports("fma");
#else
  constexpr bool has_fma = false;
#endif
  for (int c = 0; c < 3; ++c) {
    ChannelAffine& a = affine[size_t(c)];
    a = {spec.mean[c], spec.std[c], 1.0f / spec.std[c], has_fma};
    for (int v = 0; v < 256; ++v) {
      // Same float32 operations as ToTensor (x / 255) then Normalize ((x - mean) / std).
      lut[c][v] = normalise_divide(static_cast<uint8_t>(v), spec.mean[c], spec.std[c]);
      const float f = normalise_fma(static_cast<uint8_t>(v), a);
      a.fma = a.fma && std::memcmp(&f, &lut[c][v], sizeof f) == 0;
    }
  }
}

STOKER_CLONES void normalise_plane_f32(const uint8_t* __restrict src, int n, const ChannelAffine& a,
                                       float* __restrict out) {
  if (a.fma) {
    for (int k = 0; k < n; ++k) out[k] = normalise_fma(src[k], a);
  } else {
    const float mean = a.mean, std = a.std;
    for (int k = 0; k < n; ++k) out[k] = normalise_divide(src[k], mean, std);
  }
}

STOKER_CLONES void normalise_interleaved_f32(const uint8_t* __restrict src, int w,
                                             const ChannelAffine* a, float* __restrict out) {
  const ChannelAffine a0 = a[0], a1 = a[1], a2 = a[2];
  if (a0.fma && a1.fma && a2.fma) {
    for (int x = 0; x < w; ++x) {
      out[3 * x + 0] = normalise_fma(src[3 * x + 0], a0);
      out[3 * x + 1] = normalise_fma(src[3 * x + 1], a1);
      out[3 * x + 2] = normalise_fma(src[3 * x + 2], a2);
    }
    return;
  }
  for (int x = 0; x < w; ++x) {
    out[3 * x + 0] = normalise_divide(src[3 * x + 0], a0.mean, a0.std);
    out[3 * x + 1] = normalise_divide(src[3 * x + 1], a1.mean, a1.std);
    out[3 * x + 2] = normalise_divide(src[3 * x + 2], a2.mean, a2.std);
  }
}

namespace {

// Each row kernel is one plain loop that GCC vectorises (stride-3 loads become shuffles, a
// flip a reversed store), built by STOKER_CLONES (augment/row_kernels.h); the f32 arithmetic
// is ToTensor + Normalize's, element by element, as in the shared kernels below.

STOKER_CLONES void planar_f32(const uint8_t* src, int w, const ChannelAffine* a,
                              float* __restrict r, float* __restrict g, float* __restrict b) {
  const ChannelAffine a0 = a[0], a1 = a[1], a2 = a[2];
  if (a0.fma && a1.fma && a2.fma) {
    for (int x = 0; x < w; ++x) {
      r[x] = normalise_fma(src[3 * x + 0], a0);
      g[x] = normalise_fma(src[3 * x + 1], a1);
      b[x] = normalise_fma(src[3 * x + 2], a2);
    }
    return;
  }
  for (int x = 0; x < w; ++x) {
    r[x] = normalise_divide(src[3 * x + 0], a0.mean, a0.std);
    g[x] = normalise_divide(src[3 * x + 1], a1.mean, a1.std);
    b[x] = normalise_divide(src[3 * x + 2], a2.mean, a2.std);
  }
}

STOKER_CLONES void planar_u8(const uint8_t* src, int w, uint8_t* __restrict r,
                             uint8_t* __restrict g, uint8_t* __restrict b) {
  for (int x = 0; x < w; ++x) {
    r[x] = src[3 * x + 0];
    g[x] = src[3 * x + 1];
    b[x] = src[3 * x + 2];
  }
}

STOKER_CLONES void interleave_reversed(const uint8_t* __restrict r, const uint8_t* __restrict g,
                                       const uint8_t* __restrict b, int w,
                                       uint8_t* __restrict out) {
  for (int x = 0; x < w; ++x) {
    out[3 * x + 0] = r[w - 1 - x];
    out[3 * x + 1] = g[w - 1 - x];
    out[3 * x + 2] = b[w - 1 - x];
  }
}

// The row with its pixel order reversed, into scratch[3w, 6w). Two vectorised passes
// through planes in scratch[0, 3w): GCC vectorises neither a reversed stride-3 read nor a
// reversed stride-3 write, but a reversed plane read it does.
const uint8_t* mirror_row(const uint8_t* src, int w, uint8_t* scratch) {
  uint8_t* planes = scratch;
  uint8_t* out = scratch + 3 * static_cast<size_t>(w);
  planar_u8(src, w, planes, planes + w, planes + 2 * w);
  interleave_reversed(planes, planes + w, planes + 2 * w, w, out);
  return out;
}

}  // namespace

void collate_sample(const cv::Mat& rgb, bool flip, const Normalizer& norm, void* dst) {
  const OutputSpec& s = norm.spec;
  STOKER_CHECK(rgb.type() == CV_8UC3 && rgb.cols > 0 && rgb.rows > 0);
  const int h = rgb.rows, w = rgb.cols;
  if (s.dtype == DType::u8 && s.layout == Layout::nhwc && !flip && rgb.isContinuous()) {
    std::memcpy(dst, rgb.data, size_t(3) * size_t(h) * size_t(w));
    return;
  }
  const ChannelAffine* a = norm.affine.data();
  const size_t plane = static_cast<size_t>(h) * w;
  thread_local std::vector<uint8_t> scratch;
  if (flip) scratch.resize(static_cast<size_t>(w) * 6);
  for (int y = 0; y < h; ++y) {
    const uint8_t* row = rgb.ptr<uint8_t>(y);
    if (flip) row = mirror_row(row, w, scratch.data());
    const size_t at = static_cast<size_t>(y) * w;
    if (s.dtype == DType::f32) {
      float* out = static_cast<float*>(dst);
      if (s.layout == Layout::nchw) {
        planar_f32(row, w, a, out + at, out + plane + at, out + 2 * plane + at);
      } else {
        normalise_interleaved_f32(row, w, a, out + 3 * at);
      }
    } else {
      uint8_t* out = static_cast<uint8_t*>(dst);
      if (s.layout == Layout::nchw) {
        planar_u8(row, w, out + at, out + plane + at, out + 2 * plane + at);
      } else {
        std::memcpy(out + 3 * at, row, static_cast<size_t>(w) * 3);
      }
    }
  }
}

}  // namespace stoker
