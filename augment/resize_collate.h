// SPDX-License-Identifier: Apache-2.0
// The fast path's last two stages in one pass: OpenCV's 8-bit bilinear resize (INTER_LINEAR,
// its fixed-point arithmetic reproduced exactly) straight into the sample's place in the
// batch, flipped, normalised and laid out as collate_sample writes it. Bit-identical to
// resize_region(fast) + collate_sample wherever fused_resize_applies(); not a general resize.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <vector>

#include "augment/collate.h"
#include "augment/resize.h"

namespace stoker {

// Per-worker buffers, sized by the largest output seen and then reused: the steady state
// allocates nothing.
struct ResizeCollateScratch {
  std::vector<int32_t> col_offset;  // [out_w]: byte offset of the left tap in a source row
  std::vector<int16_t> col_weight;  // [out_w][8]: (w0, w1) x 3 channels, 0, 0 (sum ~2048)
  // The SIMD horizontal pass works on groups of 4 output pixels (resize_collate.cc says how).
  std::vector<int32_t> group_load;   // [out_w / 4][2]: byte offsets of its two 16-byte loads
  std::vector<uint8_t> group_table;  // [out_w / 4][3][mask a, mask b, weights][16 bytes]
  int32_t load_end = 0;              // the end of the furthest 16-byte load of any group
  std::vector<int16_t> rows;         // [2][3 * out_w]: resized source rows, >> 4
  std::vector<uint8_t> out_row;      // [3 * out_w]: one output row before u8 -> f32
};

// The horizontal pass's kernel: the best the CPU has (the default), or a lower one, so that a
// test covers each on any machine. Ordered from the most capable. Returns false, changing
// nothing, for one the CPU cannot run. For the whole process.
enum class ResizeKernel { best, avx2, ssse3, plain };
bool set_resize_kernel(ResizeKernel k);

// Whether resize_collate gives exactly what resize_region(src, out_w, out_h, filter) followed
// by collate_sample gives: the fast filter in its bilinear range (a reduction of less than 3x
// on both axes: OpenCV's area averaging beyond) and a source at least 2 pixels wide.
bool fused_resize_applies(int src_w, int src_h, int out_w, int out_h, ResizeFilter filter);

// rgb: h x w x 3 uint8 (any row stride). dst: as collate_sample's, out_h x out_w.
void resize_collate(const cv::Mat& rgb, int out_w, int out_h, bool flip, const Normalizer& norm,
                    void* dst, ResizeCollateScratch& scratch);

// What the loader runs for a sample without colour ops: resize_collate where it applies, else
// resize_region into `resized` and collate_sample from it. Either way the same bytes.
void resize_into_sample(const cv::Mat& region, int out_w, int out_h, bool flip, ResizeFilter filter,
                        const Normalizer& norm, void* dst, ResizeCollateScratch& scratch,
                        cv::Mat& resized);

}  // namespace stoker
