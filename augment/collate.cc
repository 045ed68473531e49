// SPDX-License-Identifier: Apache-2.0
#include "augment/collate.h"

#include <cstring>

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

const char* dtype_name(DType d) {
  return d == DType::f32 ? "f32" : "u8";
}
const char* layout_name(Layout l) {
  return l == Layout::nchw ? "nchw" : "nhwc";
}

Normalizer::Normalizer(const OutputSpec& s) : spec(s) {
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      // Same float32 operations as ToTensor (x / 255) then Normalize ((x - mean) / std).
      const float x = static_cast<float>(v) / 255.0f;
      lut[c][v] = (x - spec.mean[c]) / spec.std[c];
    }
  }
}

namespace {

template <class T, class Convert>
void write(const cv::Mat& rgb, bool flip, Layout layout, T* dst, Convert convert) {
  const int h = rgb.rows, w = rgb.cols;
  const size_t plane = static_cast<size_t>(h) * w;
  for (int y = 0; y < h; ++y) {
    const uint8_t* row = rgb.ptr<uint8_t>(y);
    if (layout == Layout::nhwc) {
      T* out = dst + static_cast<size_t>(y) * w * 3;
      for (int x = 0; x < w; ++x) {
        const uint8_t* p = row + 3 * (flip ? w - 1 - x : x);
        out[3 * x + 0] = convert(0, p[0]);
        out[3 * x + 1] = convert(1, p[1]);
        out[3 * x + 2] = convert(2, p[2]);
      }
    } else {
      T* r = dst + static_cast<size_t>(y) * w;
      T* g = r + plane;
      T* b = g + plane;
      for (int x = 0; x < w; ++x) {
        const uint8_t* p = row + 3 * (flip ? w - 1 - x : x);
        r[x] = convert(0, p[0]);
        g[x] = convert(1, p[1]);
        b[x] = convert(2, p[2]);
      }
    }
  }
}

}  // namespace

void collate_sample(const cv::Mat& rgb, bool flip, const Normalizer& norm, void* dst) {
  const OutputSpec& s = norm.spec;
  STOKER_CHECK(rgb.type() == CV_8UC3 && rgb.cols == s.width && rgb.rows == s.height);
  if (s.dtype == DType::u8) {
    if (s.layout == Layout::nhwc && !flip && rgb.isContinuous()) {
      std::memcpy(dst, rgb.data, s.sample_bytes());
      return;
    }
    write(rgb, flip, s.layout, static_cast<uint8_t*>(dst), [](int, uint8_t v) { return v; });
  } else {
    write(rgb, flip, s.layout, static_cast<float*>(dst),
          [&](int c, uint8_t v) { return norm.lut[c][v]; });
  }
}

}  // namespace stoker
