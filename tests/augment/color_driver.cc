// SPDX-License-Identifier: Apache-2.0
// Driver for tests/augment/color_jitter_vs_torchvision.py: runs Stoker's colour ops and its
// antialiased resize (the library's functions) on raw RGB images the Python side wrote,
// one command per stdin line, one answer line each. Not a tool; it re-implements nothing.
//
//   op RAW W H NAME FACTOR OUT       -> OUT: the image after brightness|contrast|saturation|
//                                       hue|grayscale (FACTOR ignored for grayscale)
//   jitter RAW W H SEED IDX B C S H G OUT
//                                    -> OUT: the image after the loader's draw for sample IDX
//                                       (epoch 0, attempt 0); answers "o0 o1 o2 o3 b c s h g"
//   draws SEED N B C S H G OUT       -> OUT: N lines of draws, as above
//   resize RAW W H OW OH OUT         -> OUT: OW x OH antialiased resize
// RAW and OUT are H*W*3 uint8, row-major RGB.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "augment/color_jitter.h"
#include "augment/resize_antialias.h"
#include "common/error.h"

namespace {

cv::Mat load(const std::string& path, int w, int h) {
  cv::Mat m(h, w, CV_8UC3);
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(m.data), std::streamsize(m.total() * 3)))
    stoker::fail("{}: cannot read {}x{}x3 bytes", path, w, h);
  return m;
}

void save(const std::string& path, const cv::Mat& m) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(m.data), std::streamsize(m.total() * 3));
  if (!out) stoker::fail("{}: cannot write", path);
}

std::string draw_text(const stoker::ColorDraw& d) {
  return fmt::format("{} {} {} {} {:.17g} {:.17g} {:.17g} {:.17g} {}", d.order[0], d.order[1],
                     d.order[2], d.order[3], d.brightness, d.contrast, d.saturation, d.hue,
                     int(d.grayscale));
}

std::string run(const std::string& line) {
  std::istringstream args(line);
  std::string cmd, raw, out, name;
  int w, h;
  args >> cmd;
  if (cmd == "op") {
    double f;
    if (!(args >> raw >> w >> h >> name >> f >> out)) stoker::fail("op: bad arguments");
    cv::Mat m = load(raw, w, h);
    if (name == "brightness") {
      stoker::adjust_brightness(m, f);
    } else if (name == "contrast") {
      stoker::adjust_contrast(m, f);
    } else if (name == "saturation") {
      stoker::adjust_saturation(m, f);
    } else if (name == "hue") {
      stoker::adjust_hue(m, f);
    } else if (name == "grayscale") {
      stoker::to_grayscale(m);
    } else {
      stoker::fail("op: unknown op '{}'", name);
    }
    save(out, m);
    return "ok";
  }
  if (cmd == "jitter" || cmd == "draws") {
    uint64_t seed, n = 1;
    stoker::ColorConfig c;
    if (cmd == "jitter" && !(args >> raw >> w >> h)) stoker::fail("jitter: bad arguments");
    if (!(args >> seed >> n >> c.brightness >> c.contrast >> c.saturation >> c.hue >> c.grayscale >>
          out))
      stoker::fail("{}: bad arguments", cmd);
    if (cmd == "jitter") {
      stoker::Rng rng = stoker::color_rng(seed, 0, uint32_t(n), 0);  // n: the sample index
      const stoker::ColorDraw d = stoker::draw_color(c, rng);
      cv::Mat m = load(raw, w, h);
      stoker::apply_color(d, m);
      save(out, m);
      return draw_text(d);
    }
    std::ofstream file(out);
    for (uint64_t i = 0; i < n; ++i) {
      stoker::Rng rng = stoker::color_rng(seed, 0, uint32_t(i), 0);
      file << draw_text(stoker::draw_color(c, rng)) << '\n';
    }
    if (!file) stoker::fail("{}: cannot write", out);
    return "ok";
  }
  if (cmd == "resize") {
    int ow, oh;
    if (!(args >> raw >> w >> h >> ow >> oh >> out)) stoker::fail("resize: bad arguments");
    cv::Mat dst;
    stoker::resize_antialias(load(raw, w, h), ow, oh, dst);
    save(out, dst);
    return "ok";
  }
  stoker::fail("unknown command '{}'", cmd);
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    try {
      std::cout << run(line) << std::endl;
    } catch (const stoker::Error& e) {
      std::cout << "error " << e.what() << std::endl;
      return 1;
    }
  }
  return 0;
}
