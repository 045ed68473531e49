// SPDX-License-Identifier: Apache-2.0
// The GPU resize of one batch, planned on the host: per sample a ResizeJob (where its decoded
// window is, the output size, the flip, where its Pillow taps and its intermediate rows live),
// all as offsets, so that the same plan runs on the device (resize_kernels.cu, with device
// base pointers) and on the host (run_resize_jobs_on_host, with host ones, the tests' path).
// Two passes as Pillow runs them: horizontal over the rows the vertical pass reads, rounded to
// uint8, then vertical, then ToTensor + Normalize through the loader's own per-channel tables
// (Normalizer::lut), flipped and laid out into the output tensor in its dtype.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "augment/gpu/resize_math.h"
#include "common/dtype.h"

namespace stoker {

struct ResizeJob {
  int64_t src = 0;        // byte offset of the window's first pixel in the decoded buffer
  int64_t src_pitch = 0;  // bytes from one window row to the next (RGB interleaved)
  int32_t src_w = 0, src_h = 0;
  int32_t out_w = 0, out_h = 0;
  int32_t flip = 0;
  int32_t kx = 0, ky = 0;  // taps per output value, horizontal and vertical
  int32_t y0 = 0, y1 = 0;  // window rows the vertical pass reads
  int64_t taps = 0;        // int32 offset of this job's tables (layout: taps_layout below)
  int64_t temp = 0;        // byte offset of its (y1 - y0) x out_w x 3 intermediate rows
  int64_t dst = 0;         // element offset of its sample in the output tensor
};

// A job's tables, in int32 elements from ResizeJob::taps: x first [out_w], x count [out_w],
// x weights [out_w][kx], y first [out_h], y count [out_h], y weights [out_h][ky].
struct TapsLayout {
  int64_t x_first, x_count, x_weight, y_first, y_count, y_weight, end;
};
STOKER_HD TapsLayout taps_layout(const ResizeJob& j) {
  TapsLayout t{};
  t.x_first = j.taps;
  t.x_count = t.x_first + j.out_w;
  t.x_weight = t.x_count + j.out_w;
  t.y_first = t.x_weight + int64_t(j.out_w) * j.kx;
  t.y_count = t.y_first + j.out_h;
  t.y_weight = t.y_count + j.out_h;
  t.end = t.y_weight + int64_t(j.out_h) * j.ky;
  return t;
}

// Jobs and the int32 tables they index, for one sub-batch of samples.
struct ResizePlan {
  std::vector<ResizeJob> jobs;
  std::vector<int32_t> taps;
  int64_t temp_bytes = 0;                           // intermediate rows of every job
  int32_t max_temp_pixels = 0, max_out_pixels = 0;  // the largest job's, for the launch grids
};

// Appends a job resizing a src_w x src_h window at byte `src` (row pitch `src_pitch`) of the
// decoded buffer to out_w x out_h, flipped or not, into element offset `dst` of the output.
void add_resize_job(ResizePlan& plan, int64_t src, int64_t src_pitch, int src_w, int src_h,
                    int out_w, int out_h, bool flip, int64_t dst);

// What the output tensor is: its dtype (f32, f16 or bf16: the trainer's input), layout, and
// the per-channel uint8 -> float tables (Normalizer::lut: ToTensor + Normalize's float32 values).
struct ResizeOutput {
  DType dtype = DType::f32;
  Layout layout = Layout::nchw;
  std::array<std::array<float, 256>, 3> lut{};
};

// The plan run on the host into f32 `dst` (its dtype must be f32): what the kernels compute,
// for tests without a device. decoded/temp: the buffers the job offsets index.
void run_resize_jobs_on_host(const ResizePlan& plan, const uint8_t* decoded, uint8_t* temp,
                             const ResizeOutput& out, float* dst);

}  // namespace stoker
