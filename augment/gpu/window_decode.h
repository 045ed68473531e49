// SPDX-License-Identifier: Apache-2.0
// The GPU decoder's batch on the host: where each sample's decoded window goes in the decode
// buffer, the resize plan over them (resize_job.h), and the CPU's decode of one window
// (libjpeg-turbo, full resolution, the crop alone) that stands in for nvJPEG where the engine
// refuses a file, and in the tests where there is no GPU: with it, a GPU-decode batch run on
// the host must equal CPU decode with the antialiased filter at full resolution, bit for bit.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <span>
#include <vector>

#include "augment/decoder.h"
#include "augment/gpu/encoded_sample.h"
#include "augment/gpu/resize_job.h"

namespace stoker {

// A sample's decoded pixels in the decode buffer: RGB interleaved, `pitch` bytes a row; the
// crop window starts at (x, y) of what was decoded (0, 0 when the window alone was).
struct DecodedPlace {
  int64_t offset = 0, pitch = 0;
  int32_t x = 0, y = 0, w = 0, h = 0;  // the window inside the decoded pixels
  int32_t rows = 0;                    // rows decoded: h, or the image's when decoded whole
  size_t bytes() const { return size_t(pitch) * size_t(rows); }
};

// The place of a sample whose window is decoded alone (ROI), at `offset`.
DecodedPlace window_place(const EncodedSample& e, int64_t offset);
// The place of a CPU-decoded sample: its out_w x out_h pixels (resized already).
DecodedPlace pixels_place(const EncodedSample& e, int64_t offset);
// The place of a sample decoded whole (the decoder refused the window alone): the image's
// rows at its width, the window at its (x, y).
DecodedPlace image_place(const EncodedSample& e, int64_t offset);

// Resize jobs for `samples` placed at `places`, sample i into element offset
// i x 3 x out_h x out_w of the output (all samples of a batch share one size).
void plan_batch_resize(std::span<const EncodedSample> samples, std::span<const DecodedPlace> places,
                       ResizePlan& plan);

// The crop window of `e` decoded by libjpeg-turbo at full resolution into `dst` (h x w x 3).
// Throws stoker::Error naming `name` on corrupt data.
void decode_window_on_cpu(Decoder& decoder, std::span<const uint8_t> bytes, const EncodedSample& e,
                          std::string_view name, cv::Mat& dst);

// The whole GPU decode of one batch run on the host: the GPU samples' windows decoded by
// decode_window_on_cpu, the others taken from `cpu_pixels` (u8 NHWC, out_h x out_w each),
// then the plan. dst: f32, out.dtype must be f32.
void decode_batch_on_host(std::span<const EncodedSample> samples, const uint8_t* arena,
                          const uint8_t* cpu_pixels, const ResizeOutput& out, float* dst);

}  // namespace stoker
