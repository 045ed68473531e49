// SPDX-License-Identifier: Apache-2.0
#include "tools/gen/gen_dataset.h"

#include <sys/stat.h>

#include <fmt/format.h>
#include <tbb/parallel_for.h>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

#include "augment/encode_jpeg.h"
#include "common/error.h"
#include "common/interrupt.h"
#include "common/progress.h"
#include "common/rng.h"
#include "tools/gen/synth_image.h"

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

constexpr const char* kMeta = "stoker-gen.json";             // a finished dataset
constexpr const char* kPartial = "stoker-gen.partial.json";  // one being written

// The configuration a root's `name` file records; null when it has none (or not JSON).
nlohmann::json recorded(const std::string& root, const char* name) {
  std::ifstream in(root + "/" + name);
  if (!in) return nullptr;
  return nlohmann::json::parse(in, nullptr, false);
}

// "classes 10 (asked 3), seed 1 (asked 5)": what a recorded configuration has that `want`
// does not.
std::string differences(const nlohmann::json& have, const nlohmann::json& want) {
  std::string out;
  for (const auto& [key, value] : want.items()) {
    const nlohmann::json h = have.is_object() && have.contains(key) ? have[key] : nullptr;
    if (h == value) continue;
    out += fmt::format("{}{} {} (asked {})", out.empty() ? "" : ", ", key, h.dump(), value.dump());
  }
  return out;
}

// Whether `root` may be (re)written for `want`: it is new, empty, or an unfinished run of
// the same configuration; or --force. Otherwise a UsageError saying what is there.
void check_root(const std::string& root, const nlohmann::json& want, bool force) {
  std::error_code ec;
  if (!fs::exists(root, ec)) return;
  if (!fs::is_directory(root, ec)) usage_fail("gen: '{}' exists and is not a directory", root);
  if (fs::is_empty(root, ec) || force) return;
  if (recorded(root, kPartial) == want) return;  // an interrupted run: finish it
  const nlohmann::json have = recorded(root, kMeta);
  if (!have.is_null())
    usage_fail(
        "gen: '{}' holds a dataset made with other options ({}); choose another folder, or "
        "pass --force to write over it",
        root, differences(have, want));
  usage_fail(
      "gen: '{}' is not empty and holds no stoker-gen.json (not a dataset gen wrote); choose "
      "an empty or new folder, or pass --force to write into it",
      root);
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

// Before a root is (re)written: the images an earlier run wrote (class_NNN/img_NNNNNN.jpg,
// and class folders they leave empty), so that a smaller dataset over a larger one leaves no
// file its stoker-gen.json does not describe. Nothing else in the root is touched.
void remove_generated_images(const std::string& root) {
  static const std::regex class_dir("class_[0-9]{3}"), image("img_[0-9]{6}\\.jpg(\\.tmp)?");
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(root, ec)) {
    if (!d.is_directory() || !std::regex_match(d.path().filename().string(), class_dir)) continue;
    for (const auto& f : fs::directory_iterator(d.path(), ec))
      if (std::regex_match(f.path().filename().string(), image)) fs::remove(f.path(), ec);
    if (fs::is_empty(d.path(), ec)) fs::remove(d.path(), ec);
  }
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
  const auto root_of = [&](int size) {
    return c.sizes.size() == 1 ? c.out : fmt::format("{}/{}px", c.out, size);
  };
  // Every root is judged before anything is written (or a progress line drawn).
  for (int size : c.sizes) {
    const nlohmann::json meta = describe(c, size);
    if (recorded(root_of(size), kMeta) != meta) check_root(root_of(size), meta, c.force);
  }
  Progress progress("gen", per_size * c.sizes.size(), "images", c.progress);
  for (int size : c.sizes) {
    const std::string root = root_of(size);
    result.roots.push_back(root);
    const nlohmann::json meta = describe(c, size);
    if (recorded(root, kMeta) == meta) {
      progress.add(per_size);
      continue;
    }
    std::error_code ec;
    fs::create_directories(root, ec);
    if (ec) fail("gen: cannot create '{}': {}", root, ec.message());
    // Until every image is written the root says so: a rerun finishes it, and nothing
    // mistakes it for a finished dataset.
    fs::remove(root + "/" + kMeta, ec);
    remove_generated_images(root);
    std::ofstream(root + "/" + kPartial) << meta.dump(2) << "\n";
    for (int k = 0; k < c.classes; ++k) {
      fs::create_directories(fmt::format("{}/class_{:03d}", root, k), ec);
      if (ec) fail("gen: cannot create '{}/class_{:03d}': {}", root, k, ec.message());
    }
    std::atomic<uint64_t> bytes{0};
    tbb::parallel_for(uint64_t{0}, per_size, [&](uint64_t i) {
      // Ctrl-C where a command installed the handlers (bench's implicit gen): stop soon; the
      // partial marker stays, so a rerun finishes the dataset.
      if (interrupted()) return;
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
      STOKER_CHECK(rgb.type() == CV_8UC3);
      const std::vector<uint8_t> jpeg =
          encode_jpeg_rgb(rgb.data, rgb.cols, rgb.rows, rgb.step, c.quality);
      write_file(fmt::format("{}/class_{:03d}/img_{:06d}.jpg", root, label, j), jpeg);
      bytes += jpeg.size();
      progress.add(1, jpeg.size());
    });
    if (interrupted()) {
      progress.finish();
      throw Interrupted(
          fmt::format("gen: interrupted while writing {} (unfinished: a rerun "
                      "finishes it)",
                      root));
    }
    {
      std::ofstream out(root + "/" + kPartial);
      out << meta.dump(2) << "\n";
      if (!out) fail("gen: cannot write '{}/{}': {}", root, kPartial, errno_text(errno));
    }
    fs::rename(root + "/" + kPartial, root + "/" + kMeta, ec);
    if (ec) fail("gen: cannot rename '{}/{}': {}", root, kPartial, ec.message());
    result.images += per_size;
    result.bytes += bytes.load();
  }
  progress.finish();
  return result;
}

}  // namespace stoker
