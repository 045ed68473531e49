// SPDX-License-Identifier: Apache-2.0
// The image entry point (fuzz/fuzz_entry.h). The checks after the decode are the invariants
// the augmenter relies on; a violated one is a finding even when nothing crashed.
#include "fuzz/fuzz_entry.h"

#include <algorithm>

#include "augment/decoder.h"
#include "augment/image_format.h"
#include "augment/resize.h"
#include "common/error.h"

namespace stoker::fuzz {

namespace {

uint16_t u16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | p[1] << 8);
}

// A coordinate in [0, 2 * extent): half the range lies outside the image, which the
// decoder must clamp.
int scaled(uint16_t v, int extent) {
  return static_cast<int>(static_cast<int64_t>(v) * extent / 32768);
}

// Reads every pixel of the view, so that ASan sees a view that points outside its buffer.
volatile uint64_t g_sink;

void touch(const cv::Mat& m) {
  uint64_t sum = 0;
  for (int y = 0; y < m.rows; ++y) {
    const uint8_t* row = m.ptr<uint8_t>(y);
    for (size_t i = 0; i < static_cast<size_t>(m.cols) * m.elemSize(); ++i) sum += row[i];
  }
  g_sink = sum;
}

// One open + decode + resize, as loader/readers/sample_pipeline.cc does. `p` points at 10 bytes:
// region x, y, w, h (u16 each, see scaled()), then out_w - 1 and out_h - 1.
void decode_once(Decoder& decoder, std::span<const uint8_t> image, const uint8_t* p) {
  const ImageInfo info = decoder.open(image, "fuzz input");
  STOKER_CHECK(info.width > 0 && info.height > 0);
  STOKER_CHECK(static_cast<uint64_t>(info.width) * static_cast<uint64_t>(info.height) <=
               decoder.options().max_pixels);
  // The pixel limit is checked on the size sniffed from the header, before OpenCV decodes:
  // OpenCV must have read the same size, or the check guarded a different image.
  if (info.format != ImageFormat::jpeg) {
    const ImageInfo sniffed = sniff_image(image);
    STOKER_CHECK_MSG(sniffed.width == info.width && sniffed.height == info.height,
                     "{} header says {}x{}, OpenCV decoded {}x{}", format_name(info.format),
                     sniffed.width, sniffed.height, info.width, info.height);
  }
  DecodeRequest req;
  req.region = {scaled(u16(p), info.width), scaled(u16(p + 2), info.height),
                scaled(u16(p + 4), info.width), scaled(u16(p + 6), info.height)};
  req.out_w = p[8] + 1;
  req.out_h = p[9] + 1;
  const DecodedRegion& out = decoder.decode(req);
  const cv::Mat& rgb = out.rgb;
  STOKER_CHECK(rgb.type() == CV_8UC3 && rgb.cols > 0 && rgb.rows > 0);
  const int num = out.scale_num;
  STOKER_CHECK(num == 1 || num == 2 || num == 4 || num == 8);
  // Never more than the whole image at the decoded scale.
  STOKER_CHECK(rgb.cols <= (info.width * num + 7) / 8 && rgb.rows <= (info.height * num + 7) / 8);
  // A reduced scale is chosen only when it keeps the region at least as large as the output.
  if (num < 8) STOKER_CHECK(rgb.cols >= req.out_w && rgb.rows >= req.out_h);
  touch(rgb);
  cv::Mat resized;
  resize_region(rgb, req.out_w, req.out_h, resized);
  STOKER_CHECK(resized.cols == req.out_w && resized.rows == req.out_h);
}

}  // namespace

// Prefix layout: byte 0 is flags (bit 0: DCT scaling allowed, bit 1: partial decode allowed,
// bit 2: decode the image a second time with the same decoder and the region bytes read
// backwards, as a worker reuses its decoder for the next sample), bytes 1-10 as decode_once.
void image_decode(std::span<const uint8_t> data) {
  uint8_t prefix[kImagePrefixBytes] = {};
  const size_t n = std::min(data.size(), kImagePrefixBytes);
  std::copy_n(data.begin(), n, prefix);
  const std::span<const uint8_t> image = data.subspan(n);
  DecodeOptions options;
  options.max_pixels = kImageMaxPixels;
  options.allow_dct_scaling = prefix[0] & 1;
  options.allow_partial = prefix[0] & 2;
  Decoder decoder(options);
  decode_once(decoder, image, prefix + 1);
  if (prefix[0] & 4) {
    uint8_t reversed[10];
    std::reverse_copy(prefix + 1, prefix + 11, reversed);
    decode_once(decoder, image, reversed);
  }
}

}  // namespace stoker::fuzz
