// SPDX-License-Identifier: Apache-2.0
#include "augment/gpu/decode_parts.h"

#include "common/error.h"

namespace stoker::gpu {

namespace {

// The resize's intermediate rows of a sample: at most every row of its window, out_w wide.
size_t rows_bytes(const DecodedPlace& place, const EncodedSample& e) {
  return decode_aligned(size_t(place.h) * size_t(e.out_w) * 3 + 16);
}

}  // namespace

size_t part_bytes(const DecodedPlace& place, const EncodedSample& e) {
  return decode_aligned(place.bytes()) + rows_bytes(place, e);
}

void add_to_part(DecodePart& part, size_t i, Route r, DecodedPlace place, const EncodedSample& e) {
  place.offset = int64_t(part.window_bytes);
  part.window_bytes += decode_aligned(place.bytes());
  part.temp_bytes += rows_bytes(place, e);
  EncodedSample planned = e;
  // The loader's pixels are flipped already; everything else is flipped by the resize.
  planned.on = r == Route::loader_pixels ? e.on : DecodedOn::gpu;
  part.index.push_back(i);
  part.route.push_back(r);
  part.place.push_back(place);
  part.planned.push_back(planned);
}

void cut_into_parts(std::span<const EncodedSample> samples, size_t capacity, const RouteFn& route,
                    const std::function<void(DecodePart&)>& run) {
  DecodePart part;
  for (size_t i = 0; i < samples.size(); ++i) {
    const EncodedSample& e = samples[i];
    while (true) {
      DecodedPlace place;
      Route r = Route::loader_pixels;
      if (e.on != DecodedOn::gpu) {
        place = pixels_place(e, 0);
      } else {
        r = route(e, part.index.size(), place);
      }
      if (part.bytes() + part_bytes(place, e) <= capacity) {
        add_to_part(part, i, r, place, e);
        break;
      }
      if (part.index.empty()) {
        // Too large for the decode memory even alone: the CPU decodes and resizes it.
        const DecodedPlace small = pixels_place(e, 0);
        if (part_bytes(small, e) > capacity)
          fail("GPU decode: --decode-memory of {} bytes cannot hold one {}x{} sample", capacity,
               e.out_w, e.out_h);
        add_to_part(part, i, e.on == DecodedOn::gpu ? Route::cpu : Route::loader_pixels, small, e);
        break;
      }
      run(part);
      part = DecodePart{};
    }
  }
  if (!part.index.empty()) run(part);
}

Route route_after_engine_failure(bool hybrid_parsed) {
  return hybrid_parsed ? Route::hybrid : Route::cpu_in_place;
}

void finish_part(DecodePart& part, const std::function<bool(size_t k)>& hybrid,
                 const std::function<bool(size_t k)>& in_place, std::vector<bool>& bad) {
  bad.resize(part.route.size(), false);
  for (size_t k = 0; k < part.route.size(); ++k)
    if (part.route[k] == Route::hybrid && !hybrid(k)) part.route[k] = Route::cpu_in_place;
  for (size_t k = 0; k < part.route.size(); ++k)
    if (part.route[k] == Route::cpu_in_place && !in_place(k)) bad[k] = true;
}

bool decoded_whole_image(Route route, const DecodedPlace& place) {
  const bool nvjpeg = route == Route::hardware || route == Route::hybrid;
  return nvjpeg && (place.rows != place.h || place.pitch != int64_t(place.w) * 3);
}

}  // namespace stoker::gpu
