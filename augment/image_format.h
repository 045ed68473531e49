// SPDX-License-Identifier: Apache-2.0
// Recognises an image by its first bytes (never by its file name) and, where the header is
// cheap to parse, reads its dimensions so a decompression bomb is refused before decoding.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace stoker {

enum class ImageFormat { unknown, jpeg, png, bmp, webp, tiff, pnm };

const char* format_name(ImageFormat f);

struct ImageInfo {
  ImageFormat format = ImageFormat::unknown;
  int width = 0, height = 0;  // 0 when the header was not parsed here
  // TIFF: pixels in one strip or tile, as the decoder will allocate its buffer (RowsPerStrip
  // x width, or TileWidth x TileLength); 0 when it is the image itself or unknown. A strip
  // may claim far more rows than the image has, so the image's size alone does not bound it.
  uint64_t block_pixels = 0;
  // JPEG only, from libjpeg's header: what a GPU or hardware decoder needs to know before it
  // accepts the file (augment/gpu/encoded_sample.h's gpu_decode_refusal).
  struct Jpeg {
    bool progressive = false;  // SOF2 / SOF6 / SOF10 (several scans)
    bool arithmetic = false;   // arithmetic entropy coding instead of Huffman
    bool cmyk = false;         // Adobe CMYK or YCCK (four components)
    // Three components stored as RGB, not YCbCr (an Adobe APP14 marker with transform 0, or
    // component ids 'R', 'G', 'B'): libjpeg converts no colour; nothing says nvJPEG does not.
    bool rgb = false;
    int components = 0;
    int precision = 8;    // bits per sample (12-bit JPEGs exist)
    bool has_eoi = true;  // ends with an end-of-image marker (else truncated, or trailing data)
  } jpeg;
};

// Sniffs the format and, for PNG, BMP, WebP, TIFF and PNM, the dimensions (a dimension
// beyond INT_MAX reads as INT_MAX). JPEG dimensions come from libjpeg (decode_jpeg.cc),
// which reads the header properly.
ImageInfo sniff_image(std::span<const uint8_t> bytes);

// A printable description of the first bytes, for "not an image" errors.
std::string describe_prefix(std::span<const uint8_t> bytes);

}  // namespace stoker
