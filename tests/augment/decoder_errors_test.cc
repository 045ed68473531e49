// SPDX-License-Identifier: Apache-2.0
// Bad input never crashes, hangs or yields silent wrong pixels: every case is a
// stoker::Error whose message names the file and the reason.
#include <opencv2/imgproc.hpp>

#include "augment/decoder.h"
#include "common/error.h"
#include "test_util.h"
#include "tools/gen/synth_image.h"

namespace stoker {
namespace {

std::vector<uint8_t> jpeg_bytes(int w, int h, int quality = 90) {
  cv::Mat bgr;
  cv::cvtColor(render_photo_like({w, h, 2, 10, 11}), bgr, cv::COLOR_RGB2BGR);
  std::vector<uint8_t> out;
  cv::imencode(".jpg", bgr, out, {cv::IMWRITE_JPEG_QUALITY, quality});
  return out;
}

// Offset of the first marker FF <code>.
size_t find_marker(const std::vector<uint8_t>& b, uint8_t code) {
  for (size_t i = 0; i + 1 < b.size(); ++i) {
    if (b[i] == 0xff && b[i + 1] == code) return i;
  }
  return std::string::npos;
}

// Opens and decodes the whole image; returns the error message ("" if it decoded).
std::string decode_error(const std::vector<uint8_t>& bytes, const std::string& name = "x.jpg",
                         DecodeOptions opt = {}) {
  Decoder d(opt);
  try {
    const ImageInfo info = d.open(bytes, name);
    d.decode({{0, 0, info.width, info.height}, info.width, info.height});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DecoderErrors, ZeroByteFile) {
  const std::string msg = decode_error({}, "dir/empty.jpg");
  EXPECT_NE(msg.find("dir/empty.jpg"), std::string::npos) << msg;
  EXPECT_NE(msg.find("empty"), std::string::npos) << msg;
}

TEST(DecoderErrors, TextFileNamedJpg) {
  const std::string text = "hello, this is not an image\n";
  const std::string msg = decode_error({text.begin(), text.end()}, "cls/notes.jpg");
  EXPECT_NE(msg.find("cls/notes.jpg"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a recognised image"), std::string::npos) << msg;
}

TEST(DecoderErrors, TruncatedJpeg) {
  auto b = jpeg_bytes(400, 300);
  b.resize(b.size() * 6 / 10);
  const std::string msg = decode_error(b);
  EXPECT_NE(msg.find("x.jpg"), std::string::npos);
  EXPECT_NE(msg.find("Premature end of JPEG file"), std::string::npos) << msg;
  // Even when the crop needs only the top rows, a file without EOI is decoded fully.
  Decoder d;
  d.open(b, "x.jpg");
  EXPECT_ERROR("Premature end of JPEG file", d.decode({{0, 0, 50, 20}, 50, 20}));
}

TEST(DecoderErrors, CorruptScanData) {
  auto b = jpeg_bytes(400, 300);
  const size_t sos = find_marker(b, 0xda);
  ASSERT_NE(sos, std::string::npos);
  // Cut the scan short with an EOI: libjpeg warns and fills grey; we must refuse it.
  const size_t cut = sos + (b.size() - sos) / 3;
  b.resize(cut);
  b.push_back(0xff);
  b.push_back(0xd9);
  const std::string msg = decode_error(b);
  EXPECT_NE(msg.find("corrupt JPEG data"), std::string::npos) << msg;
}

TEST(DecoderErrors, GarbageInHeader) {
  auto b = jpeg_bytes(64, 64);
  const size_t sof = find_marker(b, 0xc0);
  ASSERT_NE(sof, std::string::npos);
  b[sof + 9] = 7;  // component count: invalid for a 3-component scan
  const std::string msg = decode_error(b);
  EXPECT_NE(msg.find("x.jpg"), std::string::npos) << msg;
  // libjpeg's own diagnosis: 7 components do not fit the SOF segment's length.
  EXPECT_NE(msg.find("Bogus marker length"), std::string::npos) << msg;
}

TEST(DecoderErrors, TwelveBitJpegIsAClearError) {
  auto b = jpeg_bytes(64, 64);
  const size_t sof = find_marker(b, 0xc0);
  ASSERT_NE(sof, std::string::npos);
  b[sof + 1] = 0xc1;  // extended sequential, which allows 12-bit
  b[sof + 4] = 12;    // sample precision
  const std::string msg = decode_error(b, "deep.jpg");
  EXPECT_NE(msg.find("deep.jpg"), std::string::npos) << msg;
  EXPECT_NE(msg.find("12-bit"), std::string::npos) << msg;
}

TEST(DecoderErrors, JpegDecompressionBombIsRefusedBeforeDecoding) {
  auto b = jpeg_bytes(64, 64);
  const size_t sof = find_marker(b, 0xc0);
  ASSERT_NE(sof, std::string::npos);
  // Height and width fields: 30000 x 30000.
  b[sof + 5] = 0x75, b[sof + 6] = 0x30, b[sof + 7] = 0x75, b[sof + 8] = 0x30;
  const std::string msg = decode_error(b, "bomb.jpg");
  EXPECT_NE(msg.find("bomb.jpg"), std::string::npos) << msg;
  EXPECT_NE(msg.find("30000x30000"), std::string::npos) << msg;
  EXPECT_NE(msg.find("limit"), std::string::npos) << msg;
  // A configurable limit: a genuine 64x64 image over a 1000-pixel limit is refused too.
  DecodeOptions tiny;
  tiny.max_pixels = 1000;
  EXPECT_NE(decode_error(jpeg_bytes(64, 64), "x.jpg", tiny).find("limit"), std::string::npos);
}

TEST(DecoderErrors, PngDecompressionBombIsRefusedBeforeDecoding) {
  std::vector<uint8_t> png;
  cv::imencode(".png", cv::Mat(8, 8, CV_8UC3, cv::Scalar(1, 2, 3)), png);
  // IHDR width/height at bytes 16..23 (big endian): 100000 x 100000.
  const uint8_t big[] = {0x00, 0x01, 0x86, 0xa0};
  std::copy(big, big + 4, png.begin() + 16);
  std::copy(big, big + 4, png.begin() + 20);
  const std::string msg = decode_error(png, "bomb.png");
  EXPECT_NE(msg.find("100000x100000"), std::string::npos) << msg;
}

TEST(DecoderErrors, TruncatedPng) {
  std::vector<uint8_t> png;
  cv::imencode(".png", render_photo_like({120, 90, 1, 10, 5}), png);
  png.resize(png.size() / 2);
  const std::string msg = decode_error(png, "half.png");
  EXPECT_NE(msg.find("half.png"), std::string::npos) << msg;
  EXPECT_NE(msg.find("PNG"), std::string::npos) << msg;
}

// A PNG named .jpg is recognised by its bytes and decoded correctly, not rejected.
TEST(DecoderFormats, PngNamedJpgDecodesLikeOpenCv) {
  const cv::Mat rgb = render_photo_like({150, 100, 4, 10, 8});
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  std::vector<uint8_t> png;
  cv::imencode(".png", bgr, png);
  Decoder d;
  const ImageInfo info = d.open(png, "misnamed.jpg");
  EXPECT_EQ(info.format, ImageFormat::png);
  EXPECT_EQ(info.width, 150);
  EXPECT_EQ(info.height, 100);
  const DecodedRegion& r = d.decode({{10, 20, 50, 40}, 50, 40});
  EXPECT_EQ(test::count_diff(r.rgb, rgb(cv::Rect(10, 20, 50, 40))), 0);
}

TEST(DecoderFormats, WebpAndBmpGoThroughOpenCv) {
  const cv::Mat rgb = render_photo_like({96, 64, 4, 10, 8});
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  for (const char* ext : {".bmp", ".webp"}) {
    std::vector<uint8_t> bytes;
    ASSERT_TRUE(cv::imencode(ext, bgr, bytes, {cv::IMWRITE_WEBP_QUALITY, 101})) << ext;
    Decoder d;
    const ImageInfo info = d.open(bytes, std::string("x") + ext);
    EXPECT_EQ(info.width, 96) << ext;
    EXPECT_EQ(info.height, 64) << ext;
    const DecodedRegion& r = d.decode({{0, 0, 96, 64}, 96, 64});
    EXPECT_EQ(test::count_diff(r.rgb, rgb), 0) << ext;  // both lossless here
  }
}

TEST(DecoderFormats, GrayscaleJpegIsExpandedToThreeEqualChannels) {
  std::vector<uint8_t> bytes;
  cv::Mat gray(48, 64, CV_8UC1);
  cv::randu(gray, 0, 255);
  cv::imencode(".jpg", gray, bytes);
  Decoder d;
  const ImageInfo info = d.open(bytes, "g.jpg");
  const DecodedRegion& r = d.decode({{0, 0, info.width, info.height}, info.width, info.height});
  ASSERT_EQ(r.rgb.channels(), 3);
  std::vector<cv::Mat> ch;
  cv::split(r.rgb, ch);
  EXPECT_EQ(test::count_diff(ch[0], ch[1]), 0);
  EXPECT_EQ(test::count_diff(ch[0], ch[2]), 0);
}

// The decoder stays usable after an error: the next good file decodes correctly.
TEST(DecoderErrors, RecoversAfterAnError) {
  Decoder d;
  auto bad = jpeg_bytes(200, 100);
  bad.resize(bad.size() / 2);
  const auto good = jpeg_bytes(200, 100);
  for (int i = 0; i < 3; ++i) {
    EXPECT_ERROR("bad.jpg", {
      d.open(bad, "bad.jpg");
      d.decode({{0, 0, 200, 100}, 200, 100});
    });
    const ImageInfo info = d.open(good, "good.jpg");
    // Not merely "no throw": the pixels are the good file's, as a fresh decoder gives them.
    const cv::Mat got = d.decode({{0, 0, info.width, info.height}, 200, 100}).rgb.clone();
    Decoder fresh;
    fresh.open(good, "good.jpg");
    EXPECT_EQ(test::count_diff(got, fresh.decode({{0, 0, info.width, info.height}, 200, 100}).rgb),
              0);
  }
}

}  // namespace
}  // namespace stoker
