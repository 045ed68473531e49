// SPDX-License-Identifier: Apache-2.0
// The decode-only limit of bench/peers.sh: how many images per second one core can get out
// of libjpeg-turbo when it decodes only what a RandomResizedCrop(224) needs, with the files
// already in memory (no reads, no resize, no collate, no threads). The window and the DCT
// scale come from Stoker's own functions (random_resized_crop_rect, choose_dct_scale); the
// libjpeg calls are written out here, as augment/decode_jpeg.cc makes them. Not a loader:
// built by bench/peers.sh against the build's static libraries, not part of the product.
#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE and size_t first

#include <jpeglib.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "augment/crop.h"
#include "augment/decoder.h"
#include "common/rng.h"

namespace {

struct Jerr {
  jpeg_error_mgr pub;
  jmp_buf jump;
};

[[noreturn]] void on_error(j_common_ptr c) {
  longjmp(reinterpret_cast<Jerr*>(c->err)->jump, 1);
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "decode_limit: %s\n"
               "usage: decode_limit [--mode crop|full] [--seconds S] [--max-files N] "
               "[--dataset LABEL] DIR\n"
               "  crop: RandomResizedCrop(224) window at Stoker's DCT scale (default); full: "
               "whole image at 8/8\n",
               why);
  std::exit(2);
}

bool is_jpeg_name(const std::filesystem::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return e == ".jpg" || e == ".jpeg";
}

// Decodes file `f` (the crop of sample (pass, index) or the whole image) and returns the
// pixels decoded, or -1 with libjpeg's message in `msg`. The setjmp lives here, with nothing
// in this frame that outlives a longjmp.
long decode_one(jpeg_decompress_struct& c, Jerr& err, const std::vector<uint8_t>& f, bool crop,
                uint64_t pass, uint64_t index, std::vector<uint8_t>& pixels, char* msg) {
  if (setjmp(err.jump)) {
    (*err.pub.format_message)(reinterpret_cast<j_common_ptr>(&c), msg);
    jpeg_abort_decompress(&c);
    return -1;
  }
  jpeg_mem_src(&c, f.data(), f.size());
  jpeg_read_header(&c, TRUE);
  const int w = static_cast<int>(c.image_width), h = static_cast<int>(c.image_height);
  stoker::Rect r{0, 0, w, h};
  int num = 8;
  if (crop) {
    const stoker::TransformConfig rrc;  // RandomResizedCrop(224): scale 0.08-1, ratio 3/4-4/3
    stoker::Rng rng(1, pass, index);
    r = stoker::plan_crop(rrc, w, h, rng).region;
    num = stoker::choose_dct_scale(r.w, r.h, rrc.size, rrc.size);
  }
  c.scale_num = static_cast<unsigned>(num);
  c.scale_denom = 8;
  c.out_color_space = JCS_RGB;
  c.dct_method = JDCT_ISLOW;
  c.do_fancy_upsampling = TRUE;
  jpeg_start_decompress(&c);
  const int ow = static_cast<int>(c.output_width), oh = static_cast<int>(c.output_height);
  const int x0 = std::min(r.x * num / 8, ow - 1), y0 = std::min(r.y * num / 8, oh - 1);
  const int x1 = std::clamp(((r.x + r.w) * num + 7) / 8, x0 + 1, ow);
  const int y1 = std::clamp(((r.y + r.h) * num + 7) / 8, y0 + 1, oh);
  JDIMENSION cx = 0, cw = static_cast<JDIMENSION>(ow);
  if (x1 - x0 < ow) {
    const int m0 = std::max(0, x0 - 2), m1 = std::min(ow, x1 + 2);  // decode_jpeg.cc's margin
    cx = static_cast<JDIMENSION>(m0);
    cw = static_cast<JDIMENSION>(m1 - m0);
    jpeg_crop_scanline(&c, &cx, &cw);
  }
  if (y0 > 0) jpeg_skip_scanlines(&c, static_cast<JDIMENSION>(y0));
  const size_t stride = static_cast<size_t>(cw) * 3;
  if (pixels.size() < stride * 16) pixels.resize(stride * 16);
  JSAMPROW rows[16];
  for (int i = 0; i < 16; ++i) rows[i] = pixels.data() + stride * i;
  while (static_cast<int>(c.output_scanline) < y1) {
    const int n = std::min(16, y1 - static_cast<int>(c.output_scanline));
    jpeg_read_scanlines(&c, rows, static_cast<JDIMENSION>(n));
  }
  if (static_cast<int>(c.output_scanline) < oh) {
    jpeg_abort_decompress(&c);
  } else {
    jpeg_finish_decompress(&c);
  }
  return static_cast<long>(cw) * (y1 - y0);
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = "crop", dir, label;
  double seconds = 3;
  size_t max_files = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--mode") {
      mode = value();
    } else if (a == "--seconds") {
      seconds = std::stod(value());
    } else if (a == "--max-files") {
      max_files = std::stoul(value());
    } else if (a == "--dataset") {
      label = value();
    } else if (!a.empty() && a[0] == '-') {
      usage(("unknown option " + a).c_str());
    } else {
      dir = a;
    }
  }
  if (dir.empty()) usage("no dataset directory");
  if (mode != "crop" && mode != "full") usage(("unknown --mode " + mode).c_str());
  if (label.empty()) label = dir;

  std::vector<std::filesystem::path> paths;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file() && is_jpeg_name(it->path())) paths.push_back(it->path());
  }
  if (ec) {
    std::fprintf(stderr, "decode_limit: cannot list %s: %s\n", dir.c_str(), ec.message().c_str());
    return 1;
  }
  if (paths.empty()) {
    std::fprintf(stderr, "decode_limit: no .jpg/.jpeg files under %s\n", dir.c_str());
    return 1;
  }
  std::sort(paths.begin(), paths.end());
  // Evenly spaced files when there are more than --max-files: every class, bounded memory.
  const size_t step = (paths.size() + max_files - 1) / std::max<size_t>(max_files, 1);
  std::vector<std::vector<uint8_t>> files;
  std::vector<std::string> names;
  size_t bytes = 0;
  for (size_t i = 0; i < paths.size(); i += step) {
    std::ifstream in(paths[i], std::ios::binary);
    std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "decode_limit: cannot read %s\n", paths[i].c_str());
      return 1;
    }
    bytes += b.size();
    files.push_back(std::move(b));
    names.push_back(paths[i].string());
  }

  jpeg_decompress_struct c;
  Jerr err;
  c.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error;
  jpeg_create_decompress(&c);
  std::vector<uint8_t> pixels;
  size_t images = 0, decoded_pixels = 0, current = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  char msg[JMSG_LENGTH_MAX] = "";
  // Whole passes over the files until --seconds have gone; pass p uses crops of epoch p.
  for (uint64_t pass = 0; elapsed < seconds; ++pass) {
    for (current = 0; current < files.size(); ++current) {
      const long px =
          decode_one(c, err, files[current], mode == "crop", pass, current, pixels, msg);
      if (px < 0) {
        std::fprintf(stderr, "decode_limit: %s: %s\n", names[current].c_str(), msg);
        return 1;
      }
      decoded_pixels += static_cast<size_t>(px);
      ++images;
    }
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  jpeg_destroy_decompress(&c);
  std::printf(
      "{\"tool\": \"decode-limit\", \"variant\": \"%s\", \"dataset\": \"%s\", \"files\": %zu, "
      "\"file_bytes\": %zu, \"images\": %zu, \"seconds\": %.4f, \"images_per_s_core\": %.2f, "
      "\"decoded_megapixels_per_image\": %.4f, \"libjpeg_turbo\": %d}\n",
      mode.c_str(), label.c_str(), files.size(), bytes, images, elapsed, images / elapsed,
      decoded_pixels / 1e6 / static_cast<double>(images), LIBJPEG_TURBO_VERSION_NUMBER);
  return 0;
}
