// SPDX-License-Identifier: Apache-2.0
#include "augment/decoder.h"

#include <opencv2/core/utils/logger.hpp>
#include <opencv2/imgproc.hpp>
#ifdef STOKER_HAVE_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#endif

#include "augment/decode_jpeg.h"
#include "common/error.h"

namespace stoker {

int choose_dct_scale(int region_w, int region_h, int out_w, int out_h) {
  // Powers of two only: libjpeg-turbo has SIMD IDCTs for 1/8, 1/4, 1/2 and 1/1; the other
  // scales use plain-C IDCTs (10x10..14x14 ones for subsampled chroma) and decode slower
  // than the next power of two up, 5/8 and 6/8 slower even than 8/8 (tjbench -scale on a
  // 1024px `stoker gen` image: docs/PERFORMANCE.md).
  for (int n = 1; n < 8; n *= 2) {
    if (region_w * n / 8 >= out_w && region_h * n / 8 >= out_h) return n;
  }
  return 8;
}

Decoder::Decoder(DecodeOptions options)
    : options_(options), jpeg_(std::make_unique<JpegDecoder>()) {
  // OpenCV logs its own copy of every decode failure; ours names the file, so keep it quiet.
  cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_SILENT);
}

Decoder::~Decoder() = default;

ImageInfo Decoder::open(std::span<const uint8_t> bytes, std::string_view name) {
  bytes_ = bytes;
  name_ = name;
  info_ = sniff_image(bytes);
  if (info_.format == ImageFormat::unknown) {
    fail("{}: not a recognised image format: {}", name, describe_prefix(bytes));
  }
  if (info_.format == ImageFormat::jpeg) {
    if (!jpeg_->open(bytes, info_)) fail("{}: {}", name, jpeg_->error());
  }
  auto check_size = [&] {
    const uint64_t px = static_cast<uint64_t>(info_.width) * static_cast<uint64_t>(info_.height);
    if (px > options_.max_pixels) {
      fail(
          "{}: {} header claims {}x{} = {} pixels, more than the limit of {} (a decompression "
          "bomb?); raise --max-pixels if the image is genuine",
          name, format_name(info_.format), info_.width, info_.height, px, options_.max_pixels);
    }
  };
  check_size();
  if (info_.block_pixels > options_.max_pixels) {
    // OpenCV allocates one strip or tile as the header sizes it, whatever the image's size.
    fail(
        "{}: {} header claims strips or tiles of {} pixels, more than the limit of {} (a "
        "decompression bomb?); raise --max-pixels if the image is genuine",
        name, format_name(info_.format), info_.block_pixels, options_.max_pixels);
  }
  if (info_.format != ImageFormat::jpeg && (info_.width <= 0 || info_.height <= 0)) {
    // OpenCV allocates the whole image before reading a pixel, by its own reading of the
    // header: the size must have been checked first, so a header that gives none is refused.
    fail("{}: the {} header does not give the image size (corrupt or truncated file)", name,
         format_name(info_.format));
  }
  if (info_.format != ImageFormat::jpeg) {
    decode_other(bytes, name);
    check_size();
  }
  if (info_.width <= 0 || info_.height <= 0) {
    fail("{}: {} header gives an empty image ({}x{})", name, format_name(info_.format), info_.width,
         info_.height);
  }
  return info_;
}

#ifdef STOKER_HAVE_IMGCODECS
void Decoder::decode_other(std::span<const uint8_t> bytes, std::string_view name) {
  const cv::Mat raw(1, static_cast<int>(bytes.size()), CV_8U, const_cast<uint8_t*>(bytes.data()));
  cv::Mat bgr;
  try {
    bgr = cv::imdecode(raw, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
  } catch (const cv::Exception& e) {
    fail("{}: OpenCV could not decode this {} file: {}", name, format_name(info_.format), e.err);
  }
  if (bgr.empty()) {
    fail("{}: OpenCV could not decode this {} file (corrupt or truncated data)", name,
         format_name(info_.format));
  }
  cv::cvtColor(bgr, other_, cv::COLOR_BGR2RGB);
  info_.width = other_.cols;
  info_.height = other_.rows;
}
#else
void Decoder::decode_other(std::span<const uint8_t>, std::string_view name) {
  fail(
      "{}: a {} file, and this build decodes JPEG only (built with STOKER_WITH_IMGCODECS=OFF, "
      "as the GPU bundle is); convert the dataset to JPEG or use a full build",
      name, format_name(info_.format));
}
#endif

const DecodedRegion& Decoder::decode(const DecodeRequest& request) {
  STOKER_CHECK(info_.format != ImageFormat::unknown);
  if (info_.format == ImageFormat::jpeg) {
    if (!jpeg_->decode(request, options_, out_)) fail("{}: {}", name_, jpeg_->error());
    return out_;
  }
  const Rect& r = request.region;
  const int x = std::clamp(r.x, 0, other_.cols - 1), y = std::clamp(r.y, 0, other_.rows - 1);
  const int w = std::clamp(r.w, 1, other_.cols - x), h = std::clamp(r.h, 1, other_.rows - y);
  out_.rgb = other_(cv::Rect(x, y, w, h));
  out_.scale_num = 8;
  return out_;
}

}  // namespace stoker
