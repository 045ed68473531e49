// SPDX-License-Identifier: Apache-2.0
// One decoder per worker: JPEG through libjpeg-turbo (DCT-scaled, rows and columns outside
// the crop skipped), every other format through OpenCV. Two steps, because the crop needs
// the image size before the decoder can choose a scale: open() reads the header, decode()
// produces the region. Buffers grow to the largest image seen and are then reused.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "augment/image_format.h"

namespace stoker {

struct Rect {
  int x = 0, y = 0, w = 0, h = 0;
};

struct DecodeOptions {
  uint64_t max_pixels = 178'956'970;  // Pillow's decompression-bomb limit
  bool allow_dct_scaling = true;      // off: always decode at full resolution
  bool allow_partial = true;          // off: never skip rows or columns outside the region
};

// What the augmenter will use: `region` in full-resolution pixels, to be resized to
// out_w x out_h. The decoder may decode at any scale that keeps the region that large.
struct DecodeRequest {
  Rect region;
  int out_w = 0, out_h = 0;
};

struct DecodedRegion {
  cv::Mat rgb;        // HxWx3 uint8 RGB: the region at the decoded scale (a view into the decoder)
  int scale_num = 8;  // decoded at scale_num / 8 of full resolution
};

class JpegDecoder;

class Decoder {
 public:
  explicit Decoder(DecodeOptions options = {});
  ~Decoder();
  Decoder(const Decoder&) = delete;
  Decoder& operator=(const Decoder&) = delete;

  // Reads the header of `bytes` (which must outlive decode()). Throws stoker::Error naming
  // `name` if the data is not an image, is corrupt, or claims more than max_pixels.
  ImageInfo open(std::span<const uint8_t> bytes, std::string_view name);

  // Decodes the requested region of the image last opened. Throws stoker::Error on corrupt data.
  const DecodedRegion& decode(const DecodeRequest& request);

  const DecodeOptions& options() const { return options_; }

 private:
  // A non-JPEG image, decoded whole by OpenCV's imgcodecs into other_ (info_ gets its size);
  // a build without imgcodecs refuses it, naming the file and the format.
  void decode_other(std::span<const uint8_t> bytes, std::string_view name);

  DecodeOptions options_;
  std::unique_ptr<JpegDecoder> jpeg_;
  ImageInfo info_;
  std::span<const uint8_t> bytes_;
  std::string name_;
  cv::Mat other_;  // non-JPEG images, decoded whole by OpenCV
  DecodedRegion out_;
};

// Smallest DCT scale numerator n (scale n/8, n in 1, 2, 4, 8) that keeps a region of
// region_w x region_h full-resolution pixels at least out_w x out_h.
int choose_dct_scale(int region_w, int region_h, int out_w, int out_h);

}  // namespace stoker
