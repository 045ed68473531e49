// SPDX-License-Identifier: Apache-2.0
// Driver for tests/augment/pipeline_vs_torchvision.py: runs Stoker's own augmentation code
// (crop planning, decode, resize + collate as the loader calls them) on commands read from
// stdin, one per line, and answers one line each, so the Python side can compare pixels and
// crop geometry with torchvision. It is the library's code path, not a re-implementation; it
// is not a tool.
//
//   pixels IMAGE OUT X Y W H SIZE FLIP DCT [FILTER]
//                                           -> OUT: SIZE*SIZE*3 float32, NCHW, ImageNet-normalised;
//                                              answers "scale_num filter" (filter:
//                                              linear|area|copy|antialias); FILTER: fast
//                                              (default) or antialias, as --resize-filter
//   pixels-hw IMAGE OUT X Y W H OW OH FLIP DCT MR MG MB SR SG SB
//                                           -> OUT: OH*OW*3 float32, NCHW, normalised with
//                                              mean (MR, MG, MB) and std (SR, SG, SB)
//   center W H SIZE RESIZE [OUT_H]          -> "x y w h": plan_crop's centre-crop region
//                                              (SIZE wide, OUT_H high; default SIZE)
//   rrc W H SEED N OUT                      -> OUT: N lines "x y w h" of RandomResizedCrop draws
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "augment/collate.h"
#include "augment/crop.h"
#include "augment/decoder.h"
#include "augment/resize.h"
#include "augment/resize_collate.h"
#include "common/error.h"
#include "common/rng.h"

namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) stoker::fail("{}: cannot open", path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string pixels(std::istringstream& args) {
  std::string image, out;
  int x, y, w, h, size, flip, dct;
  if (!(args >> image >> out >> x >> y >> w >> h >> size >> flip >> dct)) {
    stoker::fail("pixels: expected IMAGE OUT X Y W H SIZE FLIP DCT [FILTER]");
  }
  std::string filter_name = "fast";
  args >> filter_name;
  const stoker::ResizeFilter rf = stoker::parse_resize_filter(filter_name);
  const std::vector<uint8_t> bytes = read_file(image);
  stoker::Decoder decoder({.allow_dct_scaling = dct != 0});
  decoder.open(bytes, image);
  const stoker::DecodedRegion& region = decoder.decode({{x, y, w, h}, size, size});
  stoker::OutputSpec spec;
  spec.width = spec.height = size;
  const stoker::Normalizer norm(spec);
  std::vector<float> tensor(spec.sample_bytes() / sizeof(float));
  // The loader's own call: the one-pass resize + collate where it applies.
  cv::Mat resized;
  stoker::ResizeCollateScratch scratch;
  stoker::resize_into_sample(region.rgb, size, size, flip != 0, rf, norm, tensor.data(), scratch,
                             resized);
  std::ofstream(out, std::ios::binary)
      .write(reinterpret_cast<const char*>(tensor.data()),
             static_cast<std::streamsize>(tensor.size() * sizeof(float)));
  // The same rule as resize_region's, to report which path the case exercised.
  const cv::Mat& s = region.rgb;
  const char* filter = s.cols == size && s.rows == size           ? "copy"
                       : rf == stoker::ResizeFilter::antialias    ? "antialias"
                       : s.cols >= 3 * size || s.rows >= 3 * size ? "area"
                                                                  : "linear";
  return fmt::format("{} {}", region.scale_num, filter);
}

// --size HxW and --mean/--std: the same library calls as `pixels`, any output shape and
// normalisation.
std::string pixels_hw(std::istringstream& args) {
  std::string image, out;
  int x, y, w, h, ow, oh, flip, dct;
  stoker::OutputSpec spec;
  if (!(args >> image >> out >> x >> y >> w >> h >> ow >> oh >> flip >> dct >> spec.mean[0] >>
        spec.mean[1] >> spec.mean[2] >> spec.std[0] >> spec.std[1] >> spec.std[2])) {
    stoker::fail("pixels-hw: expected IMAGE OUT X Y W H OW OH FLIP DCT MR MG MB SR SG SB");
  }
  const std::vector<uint8_t> bytes = read_file(image);
  stoker::Decoder decoder({.allow_dct_scaling = dct != 0});
  decoder.open(bytes, image);
  const stoker::DecodedRegion& region = decoder.decode({{x, y, w, h}, ow, oh});
  spec.width = ow;
  spec.height = oh;
  const stoker::Normalizer norm(spec);
  std::vector<float> tensor(spec.sample_bytes() / sizeof(float));
  cv::Mat resized;
  stoker::ResizeCollateScratch scratch;
  stoker::resize_into_sample(region.rgb, ow, oh, flip != 0, stoker::ResizeFilter::fast, norm,
                             tensor.data(), scratch, resized);
  std::ofstream(out, std::ios::binary)
      .write(reinterpret_cast<const char*>(tensor.data()),
             static_cast<std::streamsize>(tensor.size() * sizeof(float)));
  return fmt::format("{}", region.scale_num);
}

std::string center(std::istringstream& args) {
  int w, h;
  stoker::TransformConfig cfg;
  cfg.kind = stoker::TransformKind::center_crop;
  cfg.flip = 0;
  if (!(args >> w >> h >> cfg.size >> cfg.resize)) {
    stoker::fail("center: expected W H SIZE RESIZE [OUT_H]");
  }
  if (!(args >> cfg.height)) cfg.height = 0;
  stoker::Rng rng(0);
  const stoker::Rect r = stoker::plan_crop(cfg, w, h, rng).region;
  return fmt::format("{} {} {} {}", r.x, r.y, r.w, r.h);
}

std::string rrc(std::istringstream& args) {
  int w, h;
  uint64_t seed, n;
  std::string out;
  if (!(args >> w >> h >> seed >> n >> out)) stoker::fail("rrc: expected W H SEED N OUT");
  std::ofstream file(out);
  for (uint64_t i = 0; i < n; ++i) {
    // As the loader seeds it: (seed, epoch, sample index).
    stoker::Rng rng(seed, 0, i);
    const stoker::Rect r =
        stoker::random_resized_crop_rect(w, h, 0.08, 1.0, 3.0 / 4.0, 4.0 / 3.0, rng);
    file << r.x << ' ' << r.y << ' ' << r.w << ' ' << r.h << '\n';
  }
  if (!file) stoker::fail("{}: cannot write", out);
  return "ok";
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream args(line);
    std::string cmd;
    args >> cmd;
    try {
      if (cmd == "pixels") {
        std::cout << pixels(args) << std::endl;
      } else if (cmd == "pixels-hw") {
        std::cout << pixels_hw(args) << std::endl;
      } else if (cmd == "center") {
        std::cout << center(args) << std::endl;
      } else if (cmd == "rrc") {
        std::cout << rrc(args) << std::endl;
      } else {
        stoker::fail("unknown command '{}': expected pixels, pixels-hw, center or rrc", cmd);
      }
    } catch (const stoker::Error& e) {
      std::cout << "error " << e.what() << std::endl;
      return 1;
    }
  }
  return 0;
}
