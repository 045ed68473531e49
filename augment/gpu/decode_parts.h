// SPDX-License-Identifier: Apache-2.0
// How the GPU decoder cuts a batch into parts that fit its decode memory, and where each
// sample's decoded pixels go in it: host-only arithmetic (no CUDA, no nvJPEG), so the
// batching is tested on machines without a GPU (tests/augment/gpu/decode_parts_test.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "augment/gpu/encoded_sample.h"
#include "augment/gpu/window_decode.h"

namespace stoker::gpu {

// How one sample is decoded.
enum class Route : uint8_t {
  loader_pixels,  // the loader's CPU decoded it: its u8 pixels are copied up
  hardware,       // nvJPEG's hardware engine, batched
  hybrid,         // nvJPEG's hybrid backend, one at a time
  cpu,            // nvJPEG refused it, or it is too large: libjpeg-turbo here, resized
  // nvJPEG refused it after its place was laid out (the engine failed its batch and the
  // hybrid backend cannot parse it, or the hybrid backend failed it): libjpeg-turbo decodes
  // its window into that place, after the part's other decodes.
  cpu_in_place,
};

constexpr size_t kDecodeAlign = 256;
inline size_t decode_aligned(size_t n) {
  return (n + kDecodeAlign - 1) / kDecodeAlign * kDecodeAlign;
}

// Samples decoded together: the decoded pixels at the front of the decode memory, each at
// its place, then the resize's intermediate rows (at most every row of a window, out_w wide).
struct DecodePart {
  std::vector<size_t> index;  // positions in the batch
  std::vector<Route> route;
  std::vector<DecodedPlace> place;
  std::vector<EncodedSample> planned;  // as the resize plans it: .on == gpu where it flips
  size_t window_bytes = 0, temp_bytes = 0;
  size_t bytes() const { return window_bytes + temp_bytes; }
};

// Decode memory a sample of this place takes in a part (its pixels and its rows).
size_t part_bytes(const DecodedPlace& place, const EncodedSample& e);

// Appends sample `i` to `part` with route r, its place put after the others.
void add_to_part(DecodePart& part, size_t i, Route r, DecodedPlace place, const EncodedSample& e);

// How a GPU sample is routed and the shape of its place: (sample, its position in the part
// being filled) -> route, with `place` set (offset 0). Called again for a sample that opens a
// new part.
using RouteFn = std::function<Route(const EncodedSample&, size_t k, DecodedPlace& place)>;

// Cuts `samples` into parts of at most `capacity` bytes, in order, calling `run` on each full
// part as soon as it is cut (and on the last). A sample too large for the memory alone is
// routed to the CPU at its output size. stoker::Error when even that does not fit.
void cut_into_parts(std::span<const EncodedSample> samples, size_t capacity, const RouteFn& route,
                    const std::function<void(DecodePart&)>& run);

// The route of a hardware sample whose batch the engine failed: the hybrid backend where it
// parses the file (`hybrid_parsed`), else libjpeg-turbo into its place.
Route route_after_engine_failure(bool hybrid_parsed);

// A part's decodes after its hardware batch is enqueued, in order: each hybrid sample through
// `hybrid` (false: nvJPEG refused it, so it becomes Route::cpu_in_place), then every
// cpu_in_place sample, those of the engine's failed batch included, through `in_place`
// (false: libjpeg-turbo refused it too). Sets bad[k] for every sample no decoder took.
void finish_part(DecodePart& part, const std::function<bool(size_t k)>& hybrid,
                 const std::function<bool(size_t k)>& in_place, std::vector<bool>& bad);

// Whether a sample counts as decoded whole (GpuDecodeCounts::whole_image): nvJPEG decoded it
// (route, after finish_part) and more pixels than its window (the image's rows or width).
bool decoded_whole_image(Route route, const DecodedPlace& place);

}  // namespace stoker::gpu
