// SPDX-License-Identifier: Apache-2.0
#include "augment/image_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <climits>
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
uint32_t be16(const uint8_t* p) {
  return uint32_t(p[0]) << 8 | p[1];
}

// A header's dimension as an int: one beyond INT_MAX becomes INT_MAX, which the pixel limit
// then refuses, rather than wrapping to a negative (or, squared, small) size.
int dimension(uint64_t v) {
  return static_cast<int>(std::min<uint64_t>(v, INT_MAX));
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

// PNM: "P<n>", then width and height in decimal, read as OpenCV's PxM decoder reads them
// (which decodes these files): whitespace and '#' comments ending at CR or LF may precede a
// number, and whatever single byte follows one is consumed with it. Reading them the same
// way matters: a header read two ways is one size checked and another decoded.
void pnm_size(std::span<const uint8_t> b, ImageInfo& info) {
  size_t i = 2;
  uint64_t wh[2] = {0, 0};
  for (uint64_t& v : wh) {
    while (i < b.size() && !std::isdigit(b[i])) {
      if (b[i] == '#') {
        while (i < b.size() && b[i] != '\n' && b[i] != '\r') ++i;
        ++i;
      } else if (std::isspace(b[i])) {
        ++i;
      } else {
        return;  // OpenCV refuses the file too
      }
    }
    if (i >= b.size()) return;
    for (; i < b.size() && std::isdigit(b[i]); ++i) {
      v = std::min<uint64_t>(v * 10 + (b[i] - '0'), uint64_t{1} << 40);
    }
    ++i;  // the byte that ended the number
  }
  info.width = dimension(wh[0]);
  info.height = dimension(wh[1]);
}

// TIFF: the first image's ImageWidth (tag 256) and ImageLength (257) from the first IFD.
// libtiff takes any integer type for them, in any order: one stored in a type not read here,
// not positive, or given twice with different values is left unknown (0), and the decoder
// refuses the file rather than let libtiff pick another size than the one checked.
void tiff_size(std::span<const uint8_t> b, ImageInfo& info) {
  const bool le = b[0] == 'I';
  auto u16 = [&](size_t at) { return le ? le16(&b[at]) : be16(&b[at]); };
  auto u32 = [&](size_t at) { return le ? le32(&b[at]) : be32(&b[at]); };
  if (b.size() < 8) return;
  const uint64_t ifd = u32(4);
  if (ifd > b.size() - 2) return;
  const uint32_t entries = u16(ifd);
  constexpr int64_t kUnseen = -1, kUnreadable = -2;
  int64_t size[2] = {kUnseen, kUnseen};  // width, height
  bool conflict = false;
  uint64_t rows_per_strip = 0, tile[2] = {0, 0};
  for (uint32_t e = 0; e < entries; ++e) {
    const uint64_t at = ifd + 2 + uint64_t{12} * e;
    if (at + 12 > b.size()) return;
    const uint32_t tag = u16(at), type = u16(at + 2);
    if (tag == 278 || tag == 322 || tag == 323) {  // RowsPerStrip, TileWidth, TileLength
      // SHORT or LONG; of several, the largest counts (the buffer is what is bounded).
      const uint64_t v = u32(at + 4) != 1 ? 0
                         : type == 3      ? u16(at + 8)
                         : type == 4      ? u32(at + 8)
                                          : 0;
      uint64_t& slot = tag == 278 ? rows_per_strip : tag == 322 ? tile[0] : tile[1];
      slot = std::max(slot, v);
      continue;
    }
    if (tag != 256 && tag != 257) continue;
    int64_t v = kUnreadable;
    if (u32(at + 4) == 1) {
      switch (type) {
        case 1:
          v = b[at + 8];
          break;  // BYTE
        case 6:
          v = static_cast<int8_t>(b[at + 8]);
          break;  // SBYTE
        case 3:
          v = u16(at + 8);
          break;  // SHORT
        case 8:
          v = static_cast<int16_t>(u16(at + 8));
          break;  // SSHORT
        case 4:
          v = u32(at + 8);
          break;  // LONG
        case 9:
          v = static_cast<int32_t>(u32(at + 8));
          break;  // SLONG
        default:
          break;
      }
    }
    int64_t& slot = size[tag - 256];
    if (slot != kUnseen && slot != v) conflict = true;
    slot = v;
  }
  if (conflict) return;
  info.width = size[0] > 0 ? dimension(static_cast<uint64_t>(size[0])) : 0;
  info.height = size[1] > 0 ? dimension(static_cast<uint64_t>(size[1])) : 0;
  if (tile[0] > 0 && tile[1] > 0) {
    info.block_pixels = tile[0] * tile[1];
  } else if (rows_per_strip > 0 && rows_per_strip != 0xffffffffu) {  // 2^32-1: one strip
    info.block_pixels = rows_per_strip * static_cast<uint64_t>(info.width);
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
      info.width = dimension(be32(p + 16));
      info.height = dimension(be32(p + 20));
    }
  } else if (n >= 26 && p[0] == 'B' && p[1] == 'M') {
    info.format = ImageFormat::bmp;
    // Both are signed; a negative height means top-down rows, a negative width is invalid.
    info.width = dimension(le32(p + 18));
    const int64_t h = static_cast<int32_t>(le32(p + 22));
    info.height = dimension(static_cast<uint64_t>(h < 0 ? -h : h));
  } else if (n >= 12 && std::memcmp(p, "RIFF", 4) == 0 && std::memcmp(p + 8, "WEBP", 4) == 0) {
    info.format = ImageFormat::webp;
    webp_size(b, info);
  } else if (n >= 4 && (std::memcmp(p, "II*\0", 4) == 0 || std::memcmp(p, "MM\0*", 4) == 0)) {
    info.format = ImageFormat::tiff;
    tiff_size(b, info);
  } else if (n >= 2 && p[0] == 'P' && p[1] >= '1' && p[1] <= '6') {
    info.format = ImageFormat::pnm;
    pnm_size(b, info);
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
