// SPDX-License-Identifier: Apache-2.0
// One sample as the loader hands it to the GPU decoder (--decode gpu): its file's bytes in
// the batch's byte arena and the crop the CPU planned from the header (the same plan_crop,
// seeded the same way, as CPU decode draws), or, where the GPU cannot take the file, its
// pixels already decoded and resized by the CPU in the batch's u8 tensor, with the reason.
#pragma once

#include <cstdint>
#include <string_view>

#include "augment/decoder.h"
#include "augment/image_format.h"

namespace stoker {

// Where a sample of a GPU-decoded batch was decoded, and for the CPU why: every value but
// `gpu` is a fallback the decode counts report.
enum class DecodedOn : uint8_t {
  gpu,          // its bytes are in the arena
  not_jpeg,     // another format (PNG, WebP, ...): nvJPEG decodes JPEG only
  progressive,  // several scans: the hardware engine takes baseline JPEG only
  cmyk,         // four components
  rgb,          // stored as RGB (Adobe transform 0): nvJPEG may convert it as YCbCr
  unusual,      // arithmetic coding, 12-bit samples or 2 / 4+ components
  no_eoi,       // no end-of-image marker: the CPU decodes what there is, or names the damage
  arena_full,   // the batch's byte arena had no room left (--decode-arena)
  engine,       // nvJPEG refused it at decode time (counted by the GPU decoder)
  kDecodedOnCount
};
std::string_view decoded_on_name(DecodedOn d);

struct EncodedSample {
  uint64_t offset = 0;  // of its bytes in the arena (gpu)
  uint32_t length = 0;
  int32_t image_w = 0, image_h = 0;  // the full image (gpu)
  Rect region;                       // the crop in full-resolution pixels (gpu)
  int32_t out_w = 0, out_h = 0;      // the output size
  bool flip = false;
  DecodedOn on = DecodedOn::gpu;
};

// Why the GPU decoder does not take an image with this header (DecodedOn::gpu: it does). JPEG
// with Huffman coding, 8-bit samples, one (grey) or three YCbCr (not RGB) components, baseline or
// extended sequential: what nvJPEG's hardware engine and its hybrid backend both decode.
DecodedOn gpu_decode_refusal(const ImageInfo& info);

}  // namespace stoker
