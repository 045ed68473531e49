// SPDX-License-Identifier: Apache-2.0
#include "augment/gpu/encoded_sample.h"

namespace stoker {

std::string_view decoded_on_name(DecodedOn d) {
  switch (d) {
    case DecodedOn::gpu:
      return "gpu";
    case DecodedOn::not_jpeg:
      return "not_jpeg";
    case DecodedOn::progressive:
      return "progressive";
    case DecodedOn::cmyk:
      return "cmyk";
    case DecodedOn::rgb:
      return "rgb";
    case DecodedOn::unusual:
      return "unusual_jpeg";
    case DecodedOn::no_eoi:
      return "no_eoi";
    case DecodedOn::arena_full:
      return "arena_full";
    case DecodedOn::engine:
      return "engine_refused";
    case DecodedOn::kDecodedOnCount:
      break;
  }
  return "?";
}

DecodedOn gpu_decode_refusal(const ImageInfo& info) {
  if (info.format != ImageFormat::jpeg) return DecodedOn::not_jpeg;
  if (info.jpeg.cmyk) return DecodedOn::cmyk;
  if (info.jpeg.rgb) return DecodedOn::rgb;
  if (info.jpeg.progressive) return DecodedOn::progressive;
  if (info.jpeg.arithmetic || info.jpeg.precision != 8 ||
      (info.jpeg.components != 1 && info.jpeg.components != 3))
    return DecodedOn::unusual;
  if (!info.jpeg.has_eoi) return DecodedOn::no_eoi;
  return DecodedOn::gpu;
}

}  // namespace stoker
