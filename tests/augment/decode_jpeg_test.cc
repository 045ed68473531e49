// SPDX-License-Identifier: Apache-2.0
// Decoding against an oracle we did not write: libjpeg-turbo's own djpeg. Full-scale and
// DCT-scaled decodes must be pixel-identical to djpeg's on JPEGs made by cjpeg in every
// encoding mode, by OpenCV, by libjpeg's CMYK/YCCK writer, and on real photographs when
// opencv-doc's sample images are installed; partial decodes must equal the same region of a
// full decode.
#include <algorithm>
#include <cstdio>  // jpeglib.h needs FILE and size_t first

#include <jpeglib.h>

#include <opencv2/imgproc.hpp>

#include "augment/decoder.h"
#include "augment/gpu/encoded_sample.h"
#include "common/rng.h"
#include "test_util.h"
#include "tools/gen/synth_image.h"

namespace stoker {
namespace {

using test::TempDir;

// Writes a photo-like PPM and encodes it with cjpeg `flags`.
std::string make_jpeg(const TempDir& dir, const std::string& name, int w, int h,
                      const std::string& flags) {
  const std::string ppm = dir / (name + ".ppm");
  cv::Mat rgb = render_photo_like({w, h, 3, 10, 42});
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  cv::imwrite(ppm, bgr);
  const std::string jpg = dir / (name + ".jpg");
  EXPECT_EQ(test::run("cjpeg " + flags + " -outfile " + jpg + " " + ppm), 0) << flags;
  return jpg;
}

void expect_matches_djpeg(const std::string& jpg, int scale_num, const TempDir& dir) {
  const std::string ref = dir / "ref.pnm";
  const std::string scale = scale_num == 8 ? "" : " -scale " + std::to_string(scale_num) + "/8";
  ASSERT_EQ(test::run("djpeg -pnm" + scale + " -outfile " + ref + " " + jpg), 0) << jpg;
  const cv::Mat expected = test::read_pnm_rgb(ref);
  Decoder d;
  const auto bytes = test::read_bytes(jpg);
  const ImageInfo info = d.open(bytes, jpg);
  const int ow = info.width * scale_num / 8, oh = info.height * scale_num / 8;
  const DecodedRegion& r = d.decode({{0, 0, info.width, info.height}, ow, oh});
  EXPECT_EQ(r.scale_num, scale_num) << jpg;
  ASSERT_EQ(r.rgb.size(), expected.size()) << jpg << " scale " << scale_num;
  EXPECT_EQ(test::count_diff(r.rgb, expected), 0) << jpg << " scale " << scale_num;
}

struct Variant {
  const char* name;
  const char* flags;
};

const Variant kVariants[] = {
    {"baseline420", "-quality 90"},
    {"baseline444", "-quality 90 -sample 1x1"},
    {"baseline422", "-quality 85 -sample 2x1"},
    {"baseline440", "-quality 85 -sample 1x2"},
    {"progressive", "-quality 90 -progressive"},
    {"arithmetic", "-quality 90 -arithmetic"},
    {"grayscale", "-quality 90 -grayscale"},
    {"restart", "-quality 75 -restart 2"},
    {"optimized", "-quality 95 -optimize"},
    {"rgb", "-quality 90 -rgb"},  // stored as RGB: Adobe APP14 with transform 0
};

class DjpegOracle : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::have_tool("djpeg") || !test::have_tool("cjpeg")) {
      STOKER_SKIP_IF_OPTIONAL("djpeg/cjpeg not installed (Debian: libjpeg-turbo-progs)");
    }
  }
  TempDir dir;
};

TEST_F(DjpegOracle, FullScaleIsPixelIdenticalForEveryEncodingMode) {
  for (const Variant& v : kVariants) {
    // Odd sizes exercise partial MCUs at the right and bottom edges.
    const std::string jpg = make_jpeg(dir, v.name, 317, 239, v.flags);
    expect_matches_djpeg(jpg, 8, dir);
  }
}

TEST_F(DjpegOracle, DctScaledDecodeIsPixelIdentical) {
  for (const Variant& v : kVariants) {
    const std::string jpg = make_jpeg(dir, v.name, 517, 389, v.flags);
    for (int n : {1, 2, 4}) expect_matches_djpeg(jpg, n, dir);  // the scales the loader uses
  }
}

TEST_F(DjpegOracle, OpenCvEncodedJpegs) {
  cv::Mat bgr;
  cv::cvtColor(render_photo_like({640, 480, 1, 10, 7}), bgr, cv::COLOR_RGB2BGR);
  std::vector<uint8_t> bytes;
  cv::imencode(".jpg", bgr, bytes, {cv::IMWRITE_JPEG_QUALITY, 70});
  test::write_bytes(dir / "cv.jpg", bytes);
  expect_matches_djpeg(dir / "cv.jpg", 8, dir);
  expect_matches_djpeg(dir / "cv.jpg", 4, dir);
}

// Real photographs from Debian's opencv-doc (installed by scripts/deps.sh --test).
TEST_F(DjpegOracle, RealPhotographs) {
  const std::string folder = "/usr/share/doc/opencv-doc/examples/data";
  int checked = 0;
  for (const char* name : {"baboon.jpg", "fruits.jpg", "building.jpg", "lena.jpg", "messi5.jpg",
                           "board.jpg", "home.jpg", "orange.jpg", "aloeL.jpg", "leuvenA.jpg"}) {
    const std::string path = folder + "/" + name;
    if (!std::filesystem::exists(path)) continue;
    expect_matches_djpeg(path, 8, dir);
    expect_matches_djpeg(path, 2, dir);
    ++checked;
  }
  if (checked == 0)
    STOKER_SKIP_IF_OPTIONAL("no photographs in " << folder << " (Debian: opencv-doc)");
}

// libjpeg writes CMYK (Adobe, inverted) and YCCK; djpeg converts both to RGB for PPM output.
std::vector<uint8_t> encode_cmyk(int w, int h, J_COLOR_SPACE stored) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &out, &size);
  c.image_width = static_cast<JDIMENSION>(w);
  c.image_height = static_cast<JDIMENSION>(h);
  c.input_components = 4;
  c.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&c);
  jpeg_set_colorspace(&c, stored);
  jpeg_set_quality(&c, 90, TRUE);
  jpeg_start_compress(&c, TRUE);
  const cv::Mat rgb = render_photo_like({w, h, 5, 10, 3});
  std::vector<uint8_t> row(static_cast<size_t>(w) * 4);
  while (c.next_scanline < c.image_height) {
    const uint8_t* p = rgb.ptr<uint8_t>(static_cast<int>(c.next_scanline));
    for (int x = 0; x < w; ++x) {
      const uint8_t k =
          static_cast<uint8_t>(255 - (x * 3 + static_cast<int>(c.next_scanline)) % 90);
      row[4 * x + 0] = p[3 * x + 0];
      row[4 * x + 1] = p[3 * x + 1];
      row[4 * x + 2] = p[3 * x + 2];
      row[4 * x + 3] = k;
    }
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  std::vector<uint8_t> bytes(out, out + size);
  jpeg_destroy_compress(&c);
  free(out);
  return bytes;
}

// What the header tells the GPU decoder (--decode gpu) before it takes a file: libjpeg's own
// reading of every cjpeg mode, CMYK, a PNG and a truncated file.
TEST_F(DjpegOracle, HeaderTraitsDecideWhatTheGpuDecodes) {
  const std::pair<const char*, DecodedOn> expected[] = {
      {"baseline420", DecodedOn::gpu},         {"baseline444", DecodedOn::gpu},
      {"baseline422", DecodedOn::gpu},         {"baseline440", DecodedOn::gpu},
      {"progressive", DecodedOn::progressive}, {"arithmetic", DecodedOn::unusual},
      {"grayscale", DecodedOn::gpu},           {"restart", DecodedOn::gpu},
      {"optimized", DecodedOn::gpu},           {"rgb", DecodedOn::rgb}};
  Decoder d;
  for (const Variant& v : kVariants) {
    const auto bytes = test::read_bytes(make_jpeg(dir, v.name, 97, 61, v.flags));
    const DecodedOn want =
        std::find_if(std::begin(expected), std::end(expected), [&](const auto& e) {
          return std::string(e.first) == v.name;
        })->second;
    EXPECT_EQ(decoded_on_name(gpu_decode_refusal(d.open(bytes, v.name))), decoded_on_name(want))
        << v.name;
    if (want != DecodedOn::gpu) continue;
    // Cut before its end-of-image marker: the CPU decodes it (and names the damage).
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + long(bytes.size() * 3 / 4));
    EXPECT_EQ(gpu_decode_refusal(d.open(cut, v.name)), DecodedOn::no_eoi) << v.name;
  }
  for (J_COLOR_SPACE cs : {JCS_CMYK, JCS_YCCK})
    EXPECT_EQ(gpu_decode_refusal(d.open(encode_cmyk(40, 30, cs), "cmyk")), DecodedOn::cmyk);
  cv::Mat bgr(20, 30, CV_8UC3, cv::Scalar(1, 2, 3));
  std::vector<uint8_t> png;
  cv::imencode(".png", bgr, png);
  ImageInfo info;
  info.format = sniff_image(png).format;
  EXPECT_EQ(gpu_decode_refusal(info), DecodedOn::not_jpeg);
}

TEST_F(DjpegOracle, CmykAndYcckMatchDjpegConversion) {
  for (J_COLOR_SPACE cs : {JCS_CMYK, JCS_YCCK}) {
    const std::string jpg = dir / (cs == JCS_CMYK ? "cmyk.jpg" : "ycck.jpg");
    test::write_bytes(jpg, encode_cmyk(203, 150, cs));
    expect_matches_djpeg(jpg, 8, dir);
    expect_matches_djpeg(jpg, 2, dir);
  }
}

// Partial decode (columns cropped to iMCU boundaries, rows skipped, early stop) must give
// exactly the pixels of the same region of a full decode, at every scale.
TEST_F(DjpegOracle, PartialDecodeEqualsRegionOfFullDecode) {
  DecodeOptions whole;
  whole.allow_partial = false;
  for (const Variant& v : kVariants) {
    const std::string jpg = make_jpeg(dir, v.name, 611, 457, v.flags);
    const auto bytes = test::read_bytes(jpg);
    Decoder partial, full(whole);
    Rng rng(9, 0, 0);
    for (int trial = 0; trial < 40; ++trial) {
      const int w = static_cast<int>(rng.range(1, 612)), h = static_cast<int>(rng.range(1, 458));
      const Rect region{static_cast<int>(rng.range(0, 611 - w + 1)),
                        static_cast<int>(rng.range(0, 457 - h + 1)), w, h};
      const int out = static_cast<int>(rng.range(8, 300));
      partial.open(bytes, jpg);
      const DecodedRegion& a = partial.decode({region, out, out});
      const cv::Mat got = a.rgb.clone();
      full.open(bytes, jpg);
      const DecodedRegion& b = full.decode({region, out, out});
      ASSERT_EQ(a.scale_num, b.scale_num);
      ASSERT_EQ(got.size(), b.rgb.size()) << v.name;
      EXPECT_EQ(test::count_diff(got, b.rgb), 0)
          << v.name << " region " << region.x << "," << region.y << " " << region.w << "x"
          << region.h << " scale " << a.scale_num << "/8";
    }
  }
}

TEST(DctScale, SmallestScaleThatKeepsEnoughPixels) {
  EXPECT_EQ(choose_dct_scale(1024, 1024, 224, 224), 2);  // 256 >= 224
  EXPECT_EQ(choose_dct_scale(1792, 1792, 224, 224), 1);
  EXPECT_EQ(choose_dct_scale(800, 600, 224, 224), 4);  // 400x300: no 3/8, it is slower
  EXPECT_EQ(choose_dct_scale(224, 224, 224, 224), 8);
  EXPECT_EQ(choose_dct_scale(100, 100, 224, 224), 8);  // upscaling: full resolution
  for (int w = 8; w < 3000; w += 37) {
    const int n = choose_dct_scale(w, w, 224, 224);
    EXPECT_TRUE(n == 1 || n == 2 || n == 4 || n == 8) << n;
    if (n < 8) {
      EXPECT_GE(w * n / 8, 224);
    }
    if (n > 1) {
      EXPECT_LT(w * (n / 2) / 8, 224);
    }
  }
}

}  // namespace
}  // namespace stoker
