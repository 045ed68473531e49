// SPDX-License-Identifier: Apache-2.0
#include "augment/image_format.h"

#include <fmt/format.h>

#include <cstring>

namespace stoker {

const char* format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::jpeg:
      return "JPEG";
    case ImageFormat::png:
      return "PNG";
    case ImageFormat::bmp:
      return "BMP";
    case ImageFormat::webp:
      return "WebP";
    case ImageFormat::tiff:
      return "TIFF";
    case ImageFormat::pnm:
      return "PNM";
    case ImageFormat::unknown:
      break;
  }
  return "unknown";
}

namespace {

uint32_t be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | p[1] << 16 | p[2] << 8 | p[3];
}
uint32_t le32(const uint8_t* p) {
  return uint32_t(p[3]) << 24 | p[2] << 16 | p[1] << 8 | p[0];
}
uint32_t le24(const uint8_t* p) {
  return uint32_t(p[2]) << 16 | p[1] << 8 | p[0];
}
uint32_t le16(const uint8_t* p) {
  return uint32_t(p[1]) << 8 | p[0];
}

void webp_size(std::span<const uint8_t> b, ImageInfo& info) {
  if (b.size() < 30) return;
  const uint8_t* c = b.data() + 12;
  if (std::memcmp(c, "VP8X", 4) == 0) {
    info.width = static_cast<int>(le24(c + 12) + 1);
    info.height = static_cast<int>(le24(c + 15) + 1);
  } else if (std::memcmp(c, "VP8L", 4) == 0 && c[8] == 0x2f) {
    const uint32_t bits = le32(c + 9);
    info.width = static_cast<int>((bits & 0x3fff) + 1);
    info.height = static_cast<int>(((bits >> 14) & 0x3fff) + 1);
  } else if (std::memcmp(c, "VP8 ", 4) == 0) {
    info.width = static_cast<int>(le16(c + 14) & 0x3fff);
    info.height = static_cast<int>(le16(c + 16) & 0x3fff);
  }
}

}  // namespace

ImageInfo sniff_image(std::span<const uint8_t> b) {
  ImageInfo info;
  const size_t n = b.size();
  const uint8_t* p = b.data();
  if (n >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff) {
    info.format = ImageFormat::jpeg;
  } else if (n >= 8 && std::memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0) {
    info.format = ImageFormat::png;
    if (n >= 24 && std::memcmp(p + 12, "IHDR", 4) == 0) {
      info.width = static_cast<int>(be32(p + 16));
      info.height = static_cast<int>(be32(p + 20));
    }
  } else if (n >= 26 && p[0] == 'B' && p[1] == 'M') {
    info.format = ImageFormat::bmp;
    info.width = static_cast<int>(le32(p + 18));
    const int32_t h = static_cast<int32_t>(le32(p + 22));  // negative: top-down rows
    info.height = h < 0 ? -h : h;
  } else if (n >= 12 && std::memcmp(p, "RIFF", 4) == 0 && std::memcmp(p + 8, "WEBP", 4) == 0) {
    info.format = ImageFormat::webp;
    webp_size(b, info);
  } else if (n >= 4 && (std::memcmp(p, "II*\0", 4) == 0 || std::memcmp(p, "MM\0*", 4) == 0)) {
    info.format = ImageFormat::tiff;
  } else if (n >= 2 && p[0] == 'P' && p[1] >= '1' && p[1] <= '6') {
    info.format = ImageFormat::pnm;
  }
  return info;
}

std::string describe_prefix(std::span<const uint8_t> b) {
  if (b.empty()) return "the file is empty (0 bytes)";
  std::string text, hex;
  const size_t n = std::min<size_t>(b.size(), 8);
  for (size_t i = 0; i < n; ++i) {
    hex += fmt::format("{:02x}", b[i]);
    text += (b[i] >= 32 && b[i] < 127) ? static_cast<char>(b[i]) : '.';
  }
  return fmt::format("it starts with bytes {} (\"{}\")", hex, text);
}

}  // namespace stoker
