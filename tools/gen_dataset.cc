// SPDX-License-Identifier: Apache-2.0
#include "tools/gen_dataset.h"

#include <sys/stat.h>

#include <fmt/format.h>
#include <tbb/parallel_for.h>
#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/progress.h"
#include "common/rng.h"
#include "tools/synth_image.h"

namespace stoker {

namespace fs = std::filesystem;

void index_colour(uint32_t index, uint8_t rgb[3]) {
  for (int c = 0; c < 3; ++c) rgb[c] = static_cast<uint8_t>(((index >> (4 * c)) & 15) * 16 + 8);
}

uint32_t index_from_colour(const uint8_t rgb[3]) {
  uint32_t index = 0;
  for (int c = 0; c < 3; ++c) index |= static_cast<uint32_t>(std::min(rgb[c] / 16, 15)) << (4 * c);
  return index;
}

namespace {

nlohmann::json describe(const GenConfig& c, int size) {
  return {{"size", size},
          {"classes", c.classes},
          {"per_class", c.per_class},
          {"aspect", {c.aspect_lo, c.aspect_hi}},
          {"quality", c.quality},
          {"seed", c.seed},
          {"pattern", c.pattern == GenPattern::photo ? "photo" : "index"},
          {"generator", "stoker gen " STOKER_VERSION}};
}

bool already_done(const std::string& root, const nlohmann::json& want) {
  std::ifstream in(root + "/stoker-gen.json");
  if (!in) return false;
  try {
    return nlohmann::json::parse(in) == want;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  // Write then rename: an interrupted run never leaves a half-written image behind.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    if (!out) fail("{}: cannot write: {}", tmp, errno_text(errno));
  }
  fs::rename(tmp, path);
}

}  // namespace

GenResult generate_dataset(const GenConfig& c) {
  if (c.out.empty()) fail("gen: no output directory given");
  if (c.sizes.empty() || c.classes < 1 || c.per_class < 1) {
    fail("gen: need at least one size, one class and one image per class");
  }
  if (c.pattern == GenPattern::index && c.classes * c.per_class > 4096) {
    fail("gen: the index pattern encodes at most 4096 images ({} asked)", c.classes * c.per_class);
  }
  if (c.quality < 1 || c.quality > 100) fail("gen: JPEG quality {} is outside 1..100", c.quality);
  for (int s : c.sizes) {
    if (s < 8 || s > 16384) fail("gen: size {} is outside 8..16384", s);
  }
  GenResult result;
  const uint64_t per_size = static_cast<uint64_t>(c.classes) * c.per_class;
  Progress progress("gen", per_size * c.sizes.size(), "images", c.progress);
  for (int size : c.sizes) {
    const std::string root = c.sizes.size() == 1 ? c.out : fmt::format("{}/{}px", c.out, size);
    result.roots.push_back(root);
    const nlohmann::json meta = describe(c, size);
    if (already_done(root, meta)) {
      progress.add(per_size);
      continue;
    }
    std::error_code ec;
    for (int k = 0; k < c.classes; ++k) {
      fs::create_directories(fmt::format("{}/class_{:03d}", root, k), ec);
      if (ec) fail("gen: cannot create '{}/class_{:03d}': {}", root, k, ec.message());
    }
    std::atomic<uint64_t> bytes{0};
    tbb::parallel_for(uint64_t{0}, per_size, [&](uint64_t i) {
      const int label = static_cast<int>(i / c.per_class);
      const int j = static_cast<int>(i % c.per_class);
      Rng rng(c.seed, static_cast<uint64_t>(size), i, 0x67656eULL);
      const double aspect = std::exp(rng.uniform(std::log(c.aspect_lo), std::log(c.aspect_hi)));
      const int w = std::max(8, static_cast<int>(std::lround(size * std::sqrt(aspect))));
      const int h = std::max(8, static_cast<int>(std::lround(size / std::sqrt(aspect))));
      cv::Mat rgb;
      if (c.pattern == GenPattern::photo) {
        rgb = render_photo_like({w, h, label, c.classes, rng.next()});
      } else {
        uint8_t col[3];
        index_colour(static_cast<uint32_t>(i), col);
        rgb = cv::Mat(h, w, CV_8UC3, cv::Scalar(col[0], col[1], col[2]));
      }
      cv::Mat bgr;
      cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
      std::vector<uint8_t> jpeg;
      cv::imencode(".jpg", bgr, jpeg, {cv::IMWRITE_JPEG_QUALITY, c.quality});
      write_file(fmt::format("{}/class_{:03d}/img_{:06d}.jpg", root, label, j), jpeg);
      bytes += jpeg.size();
      progress.add(1, jpeg.size());
    });
    std::ofstream(root + "/stoker-gen.json") << meta.dump(2) << "\n";
    result.images += per_size;
    result.bytes += bytes.load();
  }
  progress.finish();
  return result;
}

}  // namespace stoker
