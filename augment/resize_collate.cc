// SPDX-License-Identifier: Apache-2.0
// OpenCV 4's cv::resize(INTER_LINEAR) on 8-bit images (imgproc/src/resize.cpp:
// resizeGeneric_ with HResizeLinear and the fixed-point VResizeLinear for uchar, whose SIMD and
// scalar loops compute the same integers) is: taps from a float coordinate, weights rounded
// to 11 bits, a horizontal pass into int32 rows, and a vertical pass
//   ((b0 * (H0 >> 4)) >> 16) + ((b1 * (H1 >> 4)) >> 16) + 2) >> 2.
// This file computes exactly those integers (its rows held as int16 after the first >> 4),
// with the flip folded into the column table and the output written in the batch's layout and
// type in the same pass. resize_collate_test compares it
// with cv::resize + collate_sample bit for bit.
#include "augment/resize_collate.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "augment/row_kernels.h"
#include "common/error.h"

namespace stoker {

namespace {

constexpr int kCoefScale = 1 << 11;  // OpenCV's INTER_RESIZE_COEF_SCALE

// One output coordinate's taps as OpenCV computes them: the source coordinate in float
// (from a double), its floor, and the weights (1 - f, f) rounded to 11 bits (cvRound: to
// nearest, ties to even, as lrintf).
struct Tap {
  int src;
  int16_t w0, w1;
};

Tap fused_linear_tap(int d, double scale) {
  float f = static_cast<float>((d + 0.5) * scale - 0.5);
  const int s = static_cast<int>(std::floor(f));
  f -= static_cast<float>(s);
  const float c0 = 1.f - f;
  return {s, static_cast<int16_t>(std::lrintf(c0 * kCoefScale)),
          static_cast<int16_t>(std::lrintf(f * kCoefScale))};
}

// The column table in output order (flip: read from the right): per output pixel, the byte
// offset of its left tap in a source row and its weights as {w0, w1} x 3 channels, 0, 0.
void fused_column_table(int src_w, int out_w, bool flip, ResizeCollateScratch& s) {
  const double scale = 1. / (static_cast<double>(out_w) / src_w);
  s.col_offset.resize(size_t(out_w));
  s.col_weight.resize(size_t(8) * out_w);
  for (int x = 0; x < out_w; ++x) {
    Tap t = fused_linear_tap(flip ? out_w - 1 - x : x, scale);
    // OpenCV's edges: a tap left of the image is the first column at weight 1; one at or past
    // the last column is the last column alone.
    if (t.src < 0) t = {0, int16_t(kCoefScale), 0};
    if (t.src + 1 >= src_w) t = {src_w - 1, int16_t(kCoefScale), 0};
    // The right tap is always read: at the last column, read the pair (last - 1, last) with
    // the weights swapped instead: the same integer, in bounds.
    if (t.src == src_w - 1) t = {src_w - 2, 0, t.w0};
    s.col_offset[size_t(x)] = 3 * t.src;
    int16_t* w = &s.col_weight[size_t(8) * x];
    for (int c = 0; c < 3; ++c) {
      w[2 * c] = t.w0;
      w[2 * c + 1] = t.w1;
    }
    w[6] = w[7] = 0;
  }
}

// One output pixel's horizontal pass, the plain way: H = (S[o + c] * w0 + S[o + 3 + c] * w1)
// >> 4, the vertical pass's first shift done here (H >> 4 fits in int16; OpenCV shifts the
// same int32 sums before its 16-bit multiply).
inline void fused_pixel_scalar(const uint8_t* src, int o, const int16_t* w, int16_t* out3) {
  for (int c = 0; c < 3; ++c)
    out3[c] = int16_t((src[o + c] * w[2 * c] + src[o + 3 + c] * w[2 * c + 1]) >> 4);
}

#if defined(__x86_64__)
// The same integers with SSSE3: the two taps of a pixel are 6 adjacent bytes, so one 8-byte
// load, a shuffle into (left, right) int16 pairs and one multiply-add give its 3 channels.
// A pixel whose 8-byte load would pass the row's last byte takes the plain path.
__attribute__((target("ssse3"))) inline __m128i fused_pixel_ssse3(const uint8_t* src, int src_bytes,
                                                                  int o, const int16_t* wt) {
  const __m128i pairs = _mm_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
  __m128i bytes;
  if (o + 8 <= src_bytes) {
    bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + o));
  } else {
    uint8_t tmp[8] = {};
    std::memcpy(tmp, src + o, 6);
    bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(tmp));
  }
  const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wt));
  return _mm_srai_epi32(_mm_madd_epi16(_mm_shuffle_epi8(bytes, pairs), w), 4);  // r g b 0
}

__attribute__((target("ssse3"))) void fused_horizontal_ssse3(const uint8_t* src, int src_bytes,
                                                             const ResizeCollateScratch& s,
                                                             int out_w, bool planar, int16_t* out) {
  const int32_t* ofs = s.col_offset.data();
  const int16_t* wt = s.col_weight.data();
#define pixel(x) fused_pixel_ssse3(src, src_bytes, ofs[x], wt + 8 * (x))
  int x = 0;
  if (planar) {
    int16_t *r = out, *g = out + out_w, *b = out + 2 * out_w;
    for (; x + 4 <= out_w; x += 4) {
      const __m128i v0 = pixel(x), v1 = pixel(x + 1), v2 = pixel(x + 2), v3 = pixel(x + 3);
      const __m128i t0 = _mm_unpacklo_epi32(v0, v1), t1 = _mm_unpacklo_epi32(v2, v3);
      const __m128i t2 = _mm_unpackhi_epi32(v0, v1), t3 = _mm_unpackhi_epi32(v2, v3);
      const __m128i rr = _mm_unpacklo_epi64(t0, t1), gg = _mm_unpackhi_epi64(t0, t1);
      const __m128i bb = _mm_unpacklo_epi64(t2, t3);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(r + x), _mm_packs_epi32(rr, rr));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(g + x), _mm_packs_epi32(gg, gg));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(b + x), _mm_packs_epi32(bb, bb));
    }
    for (; x < out_w; ++x) {
      int16_t v[3];
      fused_pixel_scalar(src, ofs[x], wt + 8 * x, v);
      r[x] = v[0], g[x] = v[1], b[x] = v[2];
    }
    return;
  }
  // Interleaved: 4 int16 stored per pixel, the 4th overwritten by the next pixel; the row
  // buffer has one element of slack for the last.
  for (; x < out_w; ++x) {
    const __m128i v = pixel(x);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 3 * x), _mm_packs_epi32(v, v));
  }
#undef pixel
}
#endif

void fused_horizontal(const uint8_t* src, int src_bytes, const ResizeCollateScratch& s, int out_w,
                      bool planar, int16_t* out) {
#if defined(__x86_64__)
  static const bool ssse3 = __builtin_cpu_supports("ssse3");
  if (ssse3) return fused_horizontal_ssse3(src, src_bytes, s, out_w, planar, out);
#endif
  for (int x = 0; x < out_w; ++x) {
    int16_t v[3];
    fused_pixel_scalar(src, s.col_offset[size_t(x)], &s.col_weight[size_t(8) * x], v);
    for (int c = 0; c < 3; ++c) out[planar ? c * out_w + x : 3 * x + c] = v[c];
  }
}

// OpenCV's vertical step on the shifted rows: ((b0 * h0) >> 16) + ((b1 * h1) >> 16) + 2) >> 2,
// 16-bit products' high halves (pmulhw), as its VResizeLinearVec_32s8u.
STOKER_CLONES void fused_vertical(const int16_t* __restrict h0, const int16_t* __restrict h1,
                                  int16_t b0, int16_t b1, int n, uint8_t* __restrict out) {
  for (int k = 0; k < n; ++k) {
    const int16_t p0 = int16_t((int32_t(h0[k]) * b0) >> 16);
    const int16_t p1 = int16_t((int32_t(h1[k]) * b1) >> 16);
    // At most ~1023 before the shift: 16-bit lanes all the way (the int casts keep GCC there).
    const int16_t v = int16_t(int16_t(p0 + p1 + 2) >> 2);
    out[k] = static_cast<uint8_t>(v > 255 ? 255 : v);
  }
}

// Writes one output row (u8, in the output's order) to row y of dst.
void fused_store_row(const uint8_t* row, int y, int out_w, int out_h, const OutputSpec& s,
                     void* dst) {
  const size_t plane = size_t(out_w) * out_h, at = size_t(y) * out_w;
  if (s.dtype == DType::f32) {
    float* out = static_cast<float*>(dst);
    if (s.layout == Layout::nchw) {
      for (int c = 0; c < 3; ++c)
        normalise_plane_f32(row + size_t(c) * out_w, out_w, s.mean[c], s.std[c],
                            out + c * plane + at);
    } else {
      normalise_interleaved_f32(row, out_w, s.mean.data(), s.std.data(), out + 3 * at);
    }
  }
  // u8 rows were written in place by the vertical pass.
}

}  // namespace

bool fused_resize_applies(int src_w, int src_h, int out_w, int out_h, ResizeFilter filter) {
  return filter == ResizeFilter::fast && src_w >= 2 && src_h >= 1 && out_w > 0 && out_h > 0 &&
         src_w < 3 * out_w && src_h < 3 * out_h;
}

void resize_collate(const cv::Mat& rgb, int out_w, int out_h, bool flip, const Normalizer& norm,
                    void* dst, ResizeCollateScratch& s) {
  STOKER_CHECK(rgb.type() == CV_8UC3 &&
               fused_resize_applies(rgb.cols, rgb.rows, out_w, out_h, ResizeFilter::fast));
  const OutputSpec& spec = norm.spec;
  const bool planar = spec.layout == Layout::nchw;
  const int n = 3 * out_w;
  fused_column_table(rgb.cols, out_w, flip, s);
  const size_t stride = size_t(n) + 8;  // slack for the interleaved 4-wide stores
  s.rows.resize(2 * stride);
  s.out_row.resize(size_t(n));
  const double scale_y = 1. / (static_cast<double>(out_h) / rgb.rows);
  // The two source rows held, horizontally resized (OpenCV keeps them the same way).
  int held[2] = {-1, -1};
  int16_t* buf[2] = {s.rows.data(), s.rows.data() + stride};
  const size_t plane = size_t(out_w) * out_h;
  for (int y = 0; y < out_h; ++y) {
    const Tap t = fused_linear_tap(y, scale_y);
    // Rows above or below the image repeat the edge row; the weights stay as computed.
    const int r0 = std::clamp(t.src, 0, rgb.rows - 1), r1 = std::clamp(t.src + 1, 0, rgb.rows - 1);
    const auto find = [&](int r) { return held[0] == r ? 0 : held[1] == r ? 1 : -1; };
    const auto fill = [&](int slot, int r) {
      fused_horizontal(rgb.ptr<uint8_t>(r), 3 * rgb.cols, s, out_w, planar, buf[slot]);
      held[slot] = r;
    };
    int s0 = find(r0);
    if (s0 < 0) fill(s0 = find(r1) == 0 ? 1 : 0, r0);  // keep r1 if it is held
    int s1 = find(r1);
    if (s1 < 0) fill(s1 = 1 - s0, r1);
    const int16_t* h[2] = {buf[s0], buf[s1]};
    uint8_t* row = s.out_row.data();
    if (spec.dtype == DType::u8) {
      uint8_t* out = static_cast<uint8_t*>(dst);
      if (planar) {
        // Three planes: the vertical pass writes each plane's row in place.
        for (int c = 0; c < 3; ++c)
          fused_vertical(h[0] + c * out_w, h[1] + c * out_w, t.w0, t.w1, out_w,
                         out + c * plane + size_t(y) * out_w);
        continue;
      }
      row = out + size_t(y) * n;
    }
    fused_vertical(h[0], h[1], t.w0, t.w1, n, row);
    fused_store_row(row, y, out_w, out_h, spec, dst);
  }
}

void resize_into_sample(const cv::Mat& region, int out_w, int out_h, bool flip, ResizeFilter filter,
                        const Normalizer& norm, void* dst, ResizeCollateScratch& scratch,
                        cv::Mat& resized) {
  if (fused_resize_applies(region.cols, region.rows, out_w, out_h, filter)) {
    resize_collate(region, out_w, out_h, flip, norm, dst, scratch);
    return;
  }
  resize_region(region, out_w, out_h, resized, filter);
  collate_sample(resized, flip, norm, dst);
}

}  // namespace stoker
