// SPDX-License-Identifier: Apache-2.0
// libjpeg-turbo through its libjpeg API (not TurboJPEG 2.1, which cannot crop or skip rows).
// Warnings are errors: libjpeg-turbo reports corrupt or truncated data as warnings and
// fills the rest with grey, which would be silent wrong pixels.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "augment/decoder.h"

namespace stoker {

class JpegDecoder {
 public:
  JpegDecoder();
  ~JpegDecoder();

  // Reads the header into info's size and JPEG traits; on failure returns false and sets
  // error().
  bool open(std::span<const uint8_t> bytes, ImageInfo& info);
  // Decodes `request.region` of the opened image; the result is a view into this decoder.
  bool decode(const DecodeRequest& request, const DecodeOptions& options, DecodedRegion& out);
  const std::string& error() const { return error_; }

 private:
  struct State;
  State* s_;
  std::vector<uint8_t> pixels_;
  std::string error_;
};

}  // namespace stoker
