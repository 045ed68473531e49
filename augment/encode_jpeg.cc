// SPDX-License-Identifier: Apache-2.0
// The function that calls setjmp keeps only plain data alive across it: a longjmp from the
// error handler must not skip a C++ destructor.
#include "augment/encode_jpeg.h"

#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <cstdlib>

#include <jpeglib.h>

#include "common/error.h"

namespace stoker {

namespace {

struct EncodeErrors {
  jpeg_error_mgr pub;  // first member: libjpeg sees only this part
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_encode_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<EncodeErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  longjmp(err->jump, 1);
}

// Returns false with err.message set; `mem`/`len` own libjpeg's malloc'd output either way.
bool compress(const uint8_t* rgb, int width, int height, size_t stride, int quality,
              EncodeErrors& err, unsigned char** mem, unsigned long* len) {
  jpeg_compress_struct cinfo;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_encode_error;
  jpeg_create_compress(&cinfo);
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_mem_dest(&cinfo, mem, len);
  cinfo.image_width = static_cast<JDIMENSION>(width);
  cinfo.image_height = static_cast<JDIMENSION>(height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  // OpenCV's JpegEncoder::write, in this order: defaults, then baseline-limited quality.
  jpeg_set_defaults(&cinfo);
  cinfo.restart_interval = 0;
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  for (int y = 0; y < height; ++y) {
    JSAMPROW row = const_cast<JSAMPROW>(rgb + static_cast<size_t>(y) * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

}  // namespace

std::vector<uint8_t> encode_jpeg_rgb(const uint8_t* rgb, int width, int height, size_t stride,
                                     int quality) {
  if (width <= 0 || height <= 0 || stride < 3 * static_cast<size_t>(width)) {
    fail("JPEG encode: bad image shape {}x{} with a row stride of {} bytes", width, height, stride);
  }
  if (quality < 1 || quality > 100) fail("JPEG encode: quality {} is outside 1..100", quality);
  EncodeErrors err{};
  unsigned char* mem = nullptr;
  unsigned long len = 0;
  const bool ok = compress(rgb, width, height, stride, quality, err, &mem, &len);
  std::vector<uint8_t> out;
  if (ok) out.assign(mem, mem + len);
  std::free(mem);
  if (!ok)
    fail("JPEG encode ({}x{}, quality {}): libjpeg-turbo: {}", width, height, quality, err.message);
  return out;
}

}  // namespace stoker
