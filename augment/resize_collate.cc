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
#include <atomic>
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

// cvRound for the weights: to nearest, ties to even. On x86-64 the SSE conversion in the
// default rounding mode, inline (lrintf is a libm call here, since errno semantics keep GCC
// from inlining it).
inline int round_even(float v) {
#if defined(__x86_64__)
  return _mm_cvtss_si32(_mm_set_ss(v));
#else
  return static_cast<int>(std::lrintf(v));
#endif
}

Tap fused_linear_tap(int d, double scale) {
  float f = static_cast<float>((d + 0.5) * scale - 0.5);
  const int s = static_cast<int>(std::floor(f));
  f -= static_cast<float>(s);
  const float c0 = 1.f - f;
  return {s, static_cast<int16_t>(round_even(c0 * kCoefScale)),
          static_cast<int16_t>(round_even(f * kCoefScale))};
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

// The SIMD horizontal pass takes output pixels 4 at a time. Pixels 0 and 1 of a group have
// their 12 tap bytes within one 16-byte load (A), pixels 2 and 3 within another (B): two
// neighbours are at most 3 source pixels apart below a 3x reduction, so a pair spans at most
// 9 + 6 bytes. Per value register (4 int32: one channel of the 4 pixels when planar; 4
// consecutive interleaved values otherwise) a shuffle mask for A and one for B place each
// value's (left, right) bytes as an int16 pair, and one multiply-add with the pixels' weights
// gives the sums. Planar groups have a register per channel too (its masks pick that channel's
// bytes), so no per-channel index arithmetic is left in the loop. Two neighbouring groups'
// entries sit side by side, so the AVX2 kernel reads a pair of groups' with one 32-byte load
// per entry.
constexpr int kGroup = 4;
constexpr uint8_t kZero = 0x80;  // a shuffle index with the high bit set writes 0

// Which pixel of the group and which channel value slot j of register k holds.
inline void group_slot(bool planar, int k, int j, int& pixel, int& channel) {
  if (planar) {
    pixel = j, channel = k;
  } else {
    pixel = (kGroup * k + j) / 3, channel = (kGroup * k + j) % 3;
  }
}

// Byte offset in group_table of group g's entry `part` (0: mask A, 1: mask B, 2: weights)
// of register k: [pair of groups][register k < 3][part][group g, group g + 1][16 bytes].
constexpr size_t kPairBytes = 3 * 96;
inline size_t group_entry(int g, int k, int part) {
  return size_t(g / 2) * kPairBytes + size_t(k) * 96 + size_t(part) * 32 + size_t(g % 2) * 16;
}

// The group tables. A group's 16-byte loads may reach past its last tap byte: the kernels
// compare each row's readable bytes (to the image's end, so only the last row's last groups
// are ever short) with load_end, and load a short group through a copy.
void fused_group_table(int out_w, bool planar, ResizeCollateScratch& s) {
  const int groups = out_w / kGroup;
  s.group_load.resize(size_t(2) * groups);
  s.group_table.resize(group_entry(groups + 1, 0, 0));
  s.load_end = 0;
  for (int g = 0; g < groups; ++g) {
    const int32_t* o = &s.col_offset[size_t(kGroup) * g];
    const int32_t load[2] = {std::min(o[0], o[1]), std::min(o[2], o[3])};
    s.group_load[2 * size_t(g)] = load[0];
    s.group_load[2 * size_t(g) + 1] = load[1];
    s.load_end = std::max({s.load_end, load[0] + 16, load[1] + 16});
    for (int k = 0; k < 3; ++k) {
      uint8_t* mask[2] = {&s.group_table[group_entry(g, k, 0)],
                          &s.group_table[group_entry(g, k, 1)]};
      auto* weight = reinterpret_cast<int16_t*>(&s.group_table[group_entry(g, k, 2)]);
      std::memset(mask[0], kZero, 16);
      std::memset(mask[1], kZero, 16);
      for (int j = 0; j < kGroup; ++j) {
        int p = 0, c = 0;
        group_slot(planar, k, j, p, c);
        const int from = p < 2 ? 0 : 1;
        const int rel = o[p] - load[from] + c;
        mask[from][4 * j] = static_cast<uint8_t>(rel);
        mask[from][4 * j + 2] = static_cast<uint8_t>(rel + 3);
        const int16_t* w = &s.col_weight[size_t(8) * (size_t(kGroup) * g + p)];
        weight[2 * j] = w[0], weight[2 * j + 1] = w[1];
      }
    }
  }
}

// Pixels [x0, x1) the plain way.
void fused_pixels_scalar(const uint8_t* src, const ResizeCollateScratch& s, int x0, int x1,
                         int out_w, bool planar, int16_t* out) {
  for (int p = x0; p < x1; ++p) {
    int16_t v[3];
    fused_pixel_scalar(src, s.col_offset[size_t(p)], &s.col_weight[size_t(8) * p], v);
    for (int c = 0; c < 3; ++c) out[planar ? c * out_w + p : 3 * p + c] = v[c];
  }
}

#if defined(__x86_64__)
// Register values of one group: its (left, right) pairs from loads a and b, weighted, >> 4.
__attribute__((target("ssse3"))) inline __m128i group_values(__m128i a, __m128i b, __m128i ma,
                                                             __m128i mb, __m128i w) {
  const __m128i pairs = _mm_or_si128(_mm_shuffle_epi8(a, ma), _mm_shuffle_epi8(b, mb));
  return _mm_srai_epi32(_mm_madd_epi16(pairs, w), 4);
}

// 16 bytes from src + at, of which fewer than 16 may be readable: those through a copy.
__attribute__((target("ssse3"))) inline __m128i load16(const uint8_t* src, int at,
                                                       ptrdiff_t readable) {
  if (at + 16 <= readable) return _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + at));
  alignas(16) uint8_t tmp[16] = {};
  std::memcpy(tmp, src + at, size_t(readable - at));
  return _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
}

__attribute__((target("ssse3"))) void fused_group_ssse3(const uint8_t* src, ptrdiff_t readable,
                                                        const ResizeCollateScratch& s, int g,
                                                        int out_w, bool planar, int16_t* out) {
  const int x = kGroup * g;
  const int32_t* load = &s.group_load[2 * size_t(g)];
  const __m128i a = load16(src, load[0], readable), b = load16(src, load[1], readable);
  const auto entry = [&](int k, int part) {
    return _mm_loadu_si128(
        reinterpret_cast<const __m128i*>(&s.group_table[group_entry(g, k, part)]));
  };
  if (planar) {
    for (int c = 0; c < 3; ++c) {
      const __m128i v = group_values(a, b, entry(c, 0), entry(c, 1), entry(c, 2));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + c * out_w + x), _mm_packs_epi32(v, v));
    }
    return;
  }
  __m128i v[3];
  for (int k = 0; k < 3; ++k) v[k] = group_values(a, b, entry(k, 0), entry(k, 1), entry(k, 2));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 3 * x), _mm_packs_epi32(v[0], v[1]));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out + 3 * x + 8), _mm_packs_epi32(v[2], v[2]));
}

__attribute__((target("ssse3"))) void fused_horizontal_ssse3(const uint8_t* src, ptrdiff_t readable,
                                                             const ResizeCollateScratch& s,
                                                             int out_w, bool planar, int16_t* out) {
  const int groups = out_w / kGroup;
  for (int g = 0; g < groups; ++g) fused_group_ssse3(src, readable, s, g, out_w, planar, out);
  fused_pixels_scalar(src, s, kGroup * groups, out_w, out_w, planar, out);
}

// Two groups at once, one per 128-bit lane.
__attribute__((target("avx2"))) inline __m256i lanes(const uint8_t* lo, const uint8_t* hi) {
  return _mm256_inserti128_si256(
      _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lo))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(hi)), 1);
}

__attribute__((target("avx2"))) inline __m256i pair_values(__m256i a, __m256i b, __m256i ma,
                                                           __m256i mb, __m256i w) {
  const __m256i pairs = _mm256_or_si256(_mm256_shuffle_epi8(a, ma), _mm256_shuffle_epi8(b, mb));
  return _mm256_srai_epi32(_mm256_madd_epi16(pairs, w), 4);
}

// Planar rows, four groups (16 pixels) a step, every load in bounds: per channel, the two
// pairs' sums packed together and put in order with one permute, one 32-byte store.
__attribute__((target("avx2"))) int planar_quads_avx2(const uint8_t* src,
                                                      const ResizeCollateScratch& s, int groups,
                                                      int out_w, int16_t* out) {
  int g = 0;
  for (; g + 4 <= groups; g += 4) {
    const int32_t* l = &s.group_load[2 * size_t(g)];
    const __m256i a0 = lanes(src + l[0], src + l[2]), b0 = lanes(src + l[1], src + l[3]);
    const __m256i a1 = lanes(src + l[4], src + l[6]), b1 = lanes(src + l[5], src + l[7]);
    const auto* t0 = reinterpret_cast<const __m256i*>(&s.group_table[group_entry(g, 0, 0)]);
    const auto* t1 = reinterpret_cast<const __m256i*>(&s.group_table[group_entry(g + 2, 0, 0)]);
    for (int c = 0; c < 3; ++c) {
      const __m256i v0 =
          pair_values(a0, b0, _mm256_loadu_si256(t0 + 3 * c), _mm256_loadu_si256(t0 + 3 * c + 1),
                      _mm256_loadu_si256(t0 + 3 * c + 2));
      const __m256i v1 =
          pair_values(a1, b1, _mm256_loadu_si256(t1 + 3 * c), _mm256_loadu_si256(t1 + 3 * c + 1),
                      _mm256_loadu_si256(t1 + 3 * c + 2));
      // packs works per lane: its quadwords hold groups g, g + 2, g + 1, g + 3.
      const __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(v0, v1), 0xD8);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c * out_w + kGroup * g), p);
    }
  }
  return g;
}

__attribute__((target("avx2"))) void fused_horizontal_avx2(const uint8_t* src, ptrdiff_t readable,
                                                           const ResizeCollateScratch& s, int out_w,
                                                           bool planar, int16_t* out) {
  const int groups = out_w / kGroup;
  const bool all_in = s.load_end <= readable;  // false only near the image's end
  int g = 0;
  if (planar && all_in) g = planar_quads_avx2(src, s, groups, out_w, out);
  for (; g + 2 <= groups; g += 2) {
    const int32_t* l = &s.group_load[2 * size_t(g)];
    if (!all_in && std::max({l[0], l[1], l[2], l[3]}) + 16 > readable) {
      fused_group_ssse3(src, readable, s, g, out_w, planar, out);
      fused_group_ssse3(src, readable, s, g + 1, out_w, planar, out);
      continue;
    }
    const __m256i a = lanes(src + l[0], src + l[2]), b = lanes(src + l[1], src + l[3]);
    const auto* t = reinterpret_cast<const __m256i*>(&s.group_table[group_entry(g, 0, 0)]);
    const int x = kGroup * g;
    __m256i v[3];
    for (int k = 0; k < 3; ++k)
      v[k] = pair_values(a, b, _mm256_loadu_si256(t + 3 * k), _mm256_loadu_si256(t + 3 * k + 1),
                         _mm256_loadu_si256(t + 3 * k + 2));
    if (planar) {
      for (int c = 0; c < 3; ++c) {
        // packs works per lane: quadwords 0 and 2 hold the two groups' 4 values each.
        const __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(v[c], v[c]), 0x08);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + c * out_w + x),
                         _mm256_castsi256_si128(p));
      }
      continue;
    }
    const __m256i p01 = _mm256_packs_epi32(v[0], v[1]), p22 = _mm256_packs_epi32(v[2], v[2]);
    int16_t* o = out + 3 * x;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o), _mm256_castsi256_si128(p01));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(o + 8), _mm256_castsi256_si128(p22));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 12), _mm256_extracti128_si256(p01, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(o + 20), _mm256_extracti128_si256(p22, 1));
  }
  for (; g < groups; ++g) fused_group_ssse3(src, readable, s, g, out_w, planar, out);
  fused_pixels_scalar(src, s, kGroup * groups, out_w, out_w, planar, out);
}
#endif

ResizeKernel best_kernel() {
#if defined(__x86_64__)
  __builtin_cpu_init();  // g_kernel's initialiser may run before the CPU model's
  if (__builtin_cpu_supports("avx2")) return ResizeKernel::avx2;
  if (__builtin_cpu_supports("ssse3")) return ResizeKernel::ssse3;
#endif
  return ResizeKernel::plain;
}

std::atomic<ResizeKernel> g_kernel{best_kernel()};

// readable: the bytes from src to the image's end (any later rows included).
void fused_horizontal(const uint8_t* src, ptrdiff_t readable, const ResizeCollateScratch& s,
                      int out_w, bool planar, int16_t* out) {
  switch (g_kernel.load(std::memory_order_relaxed)) {
#if defined(__x86_64__)
    case ResizeKernel::avx2:
      return fused_horizontal_avx2(src, readable, s, out_w, planar, out);
    case ResizeKernel::ssse3:
      return fused_horizontal_ssse3(src, readable, s, out_w, planar, out);
#endif
    default:
      return fused_pixels_scalar(src, s, 0, out_w, out_w, planar, out);
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
void fused_store_row(const uint8_t* row, int y, int out_w, int out_h, const Normalizer& norm,
                     void* dst) {
  const OutputSpec& s = norm.spec;
  const size_t plane = size_t(out_w) * out_h, at = size_t(y) * out_w;
  if (s.dtype == DType::f32) {
    float* out = static_cast<float*>(dst);
    if (s.layout == Layout::nchw) {
      for (int c = 0; c < 3; ++c)
        normalise_plane_f32(row + size_t(c) * out_w, out_w, norm.affine[size_t(c)],
                            out + c * plane + at);
    } else {
      normalise_interleaved_f32(row, out_w, norm.affine.data(), out + 3 * at);
    }
  }
  // u8 rows were written in place by the vertical pass.
}

}  // namespace

bool set_resize_kernel(ResizeKernel k) {
  const ResizeKernel best = best_kernel();
  if (k == ResizeKernel::best) k = best;
  if (static_cast<int>(k) < static_cast<int>(best)) return false;  // the CPU lacks it
  g_kernel = k;
  return true;
}

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
  fused_group_table(out_w, planar, s);
  const size_t stride = size_t(n);  // every kernel writes a row's n values and no more
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
      const uint8_t* row = rgb.ptr<uint8_t>(r);
#if defined(__x86_64__)
      // The next row's bytes on their way while this one is resized.
      if (r + 1 < rgb.rows) {
        const char* next = reinterpret_cast<const char*>(rgb.ptr<uint8_t>(r + 1));
        for (int b = 0; b < 3 * rgb.cols; b += 64) _mm_prefetch(next + b, _MM_HINT_T0);
      }
#endif
      fused_horizontal(row, rgb.dataend - row, s, out_w, planar, buf[slot]);
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
    fused_store_row(row, y, out_w, out_h, norm, dst);
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
