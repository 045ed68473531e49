// SPDX-License-Identifier: Apache-2.0
#include "augment/gpu/window_decode.h"

#include <cstring>

#include "common/error.h"

namespace stoker {

DecodedPlace window_place(const EncodedSample& e, int64_t offset) {
  return {offset, int64_t(e.region.w) * 3, 0, 0, e.region.w, e.region.h, e.region.h};
}

DecodedPlace pixels_place(const EncodedSample& e, int64_t offset) {
  return {offset, int64_t(e.out_w) * 3, 0, 0, e.out_w, e.out_h, e.out_h};
}

DecodedPlace image_place(const EncodedSample& e, int64_t offset) {
  return {offset,   int64_t(e.image_w) * 3, e.region.x, e.region.y, e.region.w, e.region.h,
          e.image_h};
}

void plan_batch_resize(std::span<const EncodedSample> samples, std::span<const DecodedPlace> places,
                       ResizePlan& plan) {
  STOKER_CHECK(samples.size() == places.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    const EncodedSample& e = samples[i];
    const DecodedPlace& p = places[i];
    const int64_t src = p.offset + int64_t(p.y) * p.pitch + int64_t(p.x) * 3;
    // A CPU-decoded sample is already resized and flipped: an identity job (Pillow's taps for
    // an unchanged size are exact copies), no second flip.
    const bool cpu = e.on != DecodedOn::gpu;
    add_resize_job(plan, src, p.pitch, p.w, p.h, e.out_w, e.out_h, cpu ? false : e.flip,
                   int64_t(i) * 3 * e.out_w * e.out_h);
  }
}

void decode_window_on_cpu(Decoder& decoder, std::span<const uint8_t> bytes, const EncodedSample& e,
                          std::string_view name, cv::Mat& dst) {
  STOKER_CHECK(!decoder.options().allow_dct_scaling);
  decoder.open(bytes, name);
  const DecodedRegion& r = decoder.decode({e.region, e.out_w, e.out_h});
  STOKER_CHECK(r.rgb.cols == e.region.w && r.rgb.rows == e.region.h);
  r.rgb.copyTo(dst);
}

void decode_batch_on_host(std::span<const EncodedSample> samples, const uint8_t* arena,
                          const uint8_t* cpu_pixels, const ResizeOutput& out, float* dst) {
  DecodeOptions full;
  full.allow_dct_scaling = false;
  Decoder decoder(full);
  std::vector<DecodedPlace> places;
  int64_t at = 0;
  for (const EncodedSample& e : samples) {
    places.push_back(e.on == DecodedOn::gpu ? window_place(e, at) : pixels_place(e, at));
    at += int64_t(places.back().bytes());
  }
  std::vector<uint8_t> decoded(static_cast<size_t>(at));
  cv::Mat window;
  for (size_t i = 0; i < samples.size(); ++i) {
    const EncodedSample& e = samples[i];
    uint8_t* p = decoded.data() + places[i].offset;
    const size_t sample_bytes = size_t(3) * size_t(e.out_w) * size_t(e.out_h);
    if (e.on != DecodedOn::gpu) {
      std::memcpy(p, cpu_pixels + i * sample_bytes, sample_bytes);
      continue;
    }
    decode_window_on_cpu(decoder, {arena + e.offset, e.length}, e, "sample", window);
    for (int y = 0; y < window.rows; ++y)
      std::memcpy(p + y * places[i].pitch, window.ptr<uint8_t>(y), size_t(window.cols) * 3);
  }
  ResizePlan plan;
  plan_batch_resize(samples, places, plan);
  std::vector<uint8_t> temp(static_cast<size_t>(plan.temp_bytes));
  run_resize_jobs_on_host(plan, decoded.data(), temp.data(), out, dst);
}

}  // namespace stoker
