// SPDX-License-Identifier: Apache-2.0
// The functions that call setjmp keep only plain data alive across it: a longjmp from the
// error handler must not skip a C++ destructor.
#include "augment/decode_jpeg.h"

#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE and size_t first

#include <jerror.h>
#include <jpeglib.h>

#include <algorithm>
#include <cstring>

namespace stoker {

namespace {

struct ErrorManager {
  jpeg_error_mgr pub;  // first member: libjpeg sees only this part
  jmp_buf jump;
  char message[2 * JMSG_LENGTH_MAX];
};

[[noreturn]] void on_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  if (cinfo->err->msg_code == JERR_BAD_PRECISION) {
    std::snprintf(err->message, sizeof err->message,
                  "%d-bit JPEG: libjpeg-turbo %s decodes 8-bit samples only",
                  cinfo->err->msg_parm.i[0], STOKER_LIBJPEG_TURBO_VERSION);
  }
  longjmp(err->jump, 1);
}

// Warnings (level -1) mean corrupt or truncated data that libjpeg would paper over with
// grey: they become errors. Trace messages (level >= 0) are ignored.
void on_emit_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;
  if (cinfo->err->msg_code == JWRN_JFIF_MAJOR) return;  // unknown JFIF revision: harmless
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  char text[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, text);
  std::snprintf(err->message, sizeof err->message, "corrupt JPEG data: %s", text);
  longjmp(err->jump, 1);
}

// A complete JPEG ends with an EOI marker (FF D9), possibly followed by a little padding.
// Without it the file is truncated or has trailing data, and we decode every row so that
// libjpeg gets the chance to report the damage.
bool ends_with_eoi(std::span<const uint8_t> b) {
  const size_t n = b.size();
  const size_t lo = n > 1024 ? n - 1024 : 0;
  for (size_t i = n; i-- > lo + 1;) {
    if (b[i - 1] == 0xff && b[i] == 0xd9) return true;
  }
  return false;
}

}  // namespace

struct JpegDecoder::State {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  bool has_eoi;
};

JpegDecoder::JpegDecoder() : s_(new State()) {
  s_->cinfo.err = jpeg_std_error(&s_->err.pub);
  s_->err.pub.error_exit = on_error_exit;
  s_->err.pub.emit_message = on_emit_message;
  jpeg_create_decompress(&s_->cinfo);
}

JpegDecoder::~JpegDecoder() {
  jpeg_destroy_decompress(&s_->cinfo);
  delete s_;
}

bool JpegDecoder::open(std::span<const uint8_t> bytes, ImageInfo& info) {
  jpeg_decompress_struct* c = &s_->cinfo;
  jpeg_abort_decompress(c);
  if (setjmp(s_->err.jump)) {
    error_ = s_->err.message;
    jpeg_abort_decompress(c);
    return false;
  }
  jpeg_mem_src(c, bytes.data(), bytes.size());
  jpeg_read_header(c, TRUE);
  info.width = static_cast<int>(c->image_width);
  info.height = static_cast<int>(c->image_height);
  info.jpeg.progressive = c->progressive_mode != 0;
  info.jpeg.arithmetic = c->arith_code != 0;
  info.jpeg.cmyk = c->jpeg_color_space == JCS_CMYK || c->jpeg_color_space == JCS_YCCK;
  info.jpeg.rgb = c->jpeg_color_space == JCS_RGB;
  info.jpeg.components = c->num_components;
  info.jpeg.precision = c->data_precision;
  s_->has_eoi = ends_with_eoi(bytes);
  info.jpeg.has_eoi = s_->has_eoi;
  return true;
}

bool JpegDecoder::decode(const DecodeRequest& req, const DecodeOptions& opt, DecodedRegion& out) {
  jpeg_decompress_struct* c = &s_->cinfo;
  if (setjmp(s_->err.jump)) {
    error_ = s_->err.message;
    jpeg_abort_decompress(c);
    return false;
  }
  const int full_w = static_cast<int>(c->image_width), full_h = static_cast<int>(c->image_height);
  const int rx = std::clamp(req.region.x, 0, full_w - 1);
  const int ry = std::clamp(req.region.y, 0, full_h - 1);
  const int rw = std::clamp(req.region.w, 1, full_w - rx);
  const int rh = std::clamp(req.region.h, 1, full_h - ry);
  const int num = opt.allow_dct_scaling ? choose_dct_scale(rw, rh, req.out_w, req.out_h) : 8;

  c->scale_num = static_cast<unsigned>(num);
  c->scale_denom = 8;
  const bool cmyk = c->jpeg_color_space == JCS_CMYK || c->jpeg_color_space == JCS_YCCK;
  c->out_color_space = cmyk ? JCS_CMYK : JCS_RGB;  // grayscale is expanded to RGB by libjpeg
  c->dct_method = JDCT_ISLOW;                      // djpeg's default: pixel-identical output
  c->do_fancy_upsampling = TRUE;
  jpeg_start_decompress(c);

  // The region at the decoded scale: [x0, x1) x [y0, y1).
  const int ow = static_cast<int>(c->output_width), oh = static_cast<int>(c->output_height);
  const int x0 = std::min(rx * num / 8, ow - 1);
  const int y0 = std::min(ry * num / 8, oh - 1);
  const int x1 = std::clamp(((rx + rw) * num + 7) / 8, x0 + 1, ow);
  const int y1 = std::clamp(((ry + rh) * num + 7) / 8, y0 + 1, oh);

  JDIMENSION crop_x = 0, crop_w = static_cast<JDIMENSION>(ow);
  if (opt.allow_partial && x1 - x0 < ow) {
    // Fancy chroma upsampling treats the window's edges as image edges, so the outermost
    // columns of a cropped decode differ from a full decode: keep a margin beyond the
    // region. libjpeg widens the start further, down to an iMCU boundary.
    constexpr int kMargin = 2;
    const int cx0 = std::max(0, x0 - kMargin), cx1 = std::min(ow, x1 + kMargin);
    crop_x = static_cast<JDIMENSION>(cx0);
    crop_w = static_cast<JDIMENSION>(cx1 - cx0);
    jpeg_crop_scanline(c, &crop_x, &crop_w);
  }
  const bool partial_rows = opt.allow_partial && s_->has_eoi;
  const int first_row = partial_rows ? y0 : 0;
  const int last_row = partial_rows ? y1 : oh;
  if (first_row > 0) jpeg_skip_scanlines(c, static_cast<JDIMENSION>(first_row));

  const int comps = c->output_components;
  const size_t stride = static_cast<size_t>(crop_w) * comps;
  const size_t need = stride * static_cast<size_t>(last_row - first_row);
  if (pixels_.size() < need) pixels_.resize(need);
  uint8_t* base = pixels_.data();
  JSAMPROW rows[16];
  while (static_cast<int>(c->output_scanline) < last_row) {
    const int at = static_cast<int>(c->output_scanline);
    const int n = std::min(16, last_row - at);
    for (int i = 0; i < n; ++i) rows[i] = base + static_cast<size_t>(at - first_row + i) * stride;
    jpeg_read_scanlines(c, rows, static_cast<JDIMENSION>(n));
  }
  if (static_cast<int>(c->output_scanline) < oh) {
    jpeg_abort_decompress(c);  // the rows below the region are never needed
  } else {
    jpeg_finish_decompress(c);
  }

  size_t out_stride = stride;
  if (cmyk) {
    // Adobe writes inverted CMYK; convert as djpeg does (R = C * K / 255, rounded),
    // compacting 4 to 3 channels in place (the write never overtakes the read).
    const size_t rows_n = static_cast<size_t>(last_row - first_row);
    out_stride = static_cast<size_t>(crop_w) * 3;
    for (size_t y = 0; y < rows_n; ++y) {
      const uint8_t* src = base + y * stride;
      uint8_t* dst = base + y * out_stride;
      for (JDIMENSION x = 0; x < crop_w; ++x, src += 4, dst += 3) {
        const unsigned k = src[3];
        dst[0] = static_cast<uint8_t>((2 * src[0] * k + 255) / 510);
        dst[1] = static_cast<uint8_t>((2 * src[1] * k + 255) / 510);
        dst[2] = static_cast<uint8_t>((2 * src[2] * k + 255) / 510);
      }
    }
  }
  uint8_t* origin = base + static_cast<size_t>(y0 - first_row) * out_stride +
                    static_cast<size_t>(x0 - static_cast<int>(crop_x)) * 3;
  out.rgb = cv::Mat(y1 - y0, x1 - x0, CV_8UC3, origin, out_stride);
  out.scale_num = num;
  return true;
}

}  // namespace stoker
