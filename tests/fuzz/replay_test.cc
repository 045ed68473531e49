// SPDX-License-Identifier: Apache-2.0
// Replays every fuzzing seed (fuzz/corpus/<target>/) and every input a fuzzer once broke
// Stoker with (fuzz/regressions/<target>/) through the fuzzers' own entry points, in the
// normal build: each must be accepted or refused with stoker::Error, never crash, throw
// anything else or grow the process past a sane size. Seeds named ok-* must be accepted and
// bad-* refused, so the entry points are known to reach the parsers' far ends; a regression
// with a NAME.expect beside it must be refused with a message containing that file's text
// (its first line), where the old behaviour was a wrong answer rather than a crash.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "common/error.h"
#include "fuzz/fuzz_entry.h"

namespace stoker {
namespace {

namespace fs = std::filesystem;

// Peak resident memory a replay may reach: decoding stays under kImageMaxPixels (12 MiB of
// RGB) and the other inputs are a few KiB, so more than this is an unbounded allocation.
constexpr long kMaxRssKiB = 512 * 1024;

std::vector<fs::path> inputs(const std::string& dir) {
  std::vector<fs::path> files;
  const fs::path d = fs::path(STOKER_FUZZ_DIR) / dir;
  if (!fs::is_directory(d)) return files;
  for (const fs::directory_entry& e : fs::directory_iterator(d)) {
    if (e.is_regular_file() && e.path().extension() != ".expect") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<uint8_t> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

void replay(const std::string& target, const std::function<void(std::span<const uint8_t>)>& entry) {
  const std::vector<fs::path> seeds = inputs("corpus/" + target);
  ASSERT_FALSE(seeds.empty()) << "no seeds in " << STOKER_FUZZ_DIR << "/corpus/" << target;
  std::vector<fs::path> all = seeds;
  const std::vector<fs::path> regressions = inputs("regressions/" + target);
  all.insert(all.end(), regressions.begin(), regressions.end());
  size_t accepted = 0, refused = 0;
  for (const fs::path& p : all) {
    SCOPED_TRACE(p.string());
    const std::vector<uint8_t> bytes = slurp(p);
    const std::string name = p.filename().string();
    std::string expect;
    if (std::ifstream in(p.string() + ".expect"); in) std::getline(in, expect);
    bool ok = false;
    try {
      entry(bytes);
      ok = true;
      ++accepted;
    } catch (const Error& e) {
      ++refused;
      // The message is what a user reads: it must say something.
      EXPECT_GT(std::string(e.what()).size(), 10u);
      if (name.starts_with("ok-")) ADD_FAILURE() << "a valid seed was refused: " << e.what();
      if (!expect.empty()) {
        EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw something other than stoker::Error: " << e.what();
    }
    if (ok && name.starts_with("bad-")) ADD_FAILURE() << "an invalid seed was accepted";
    if (ok && !expect.empty()) ADD_FAILURE() << "accepted; expected a refusal saying: " << expect;
  }
  EXPECT_LT(peak_rss_kib(), kMaxRssKiB);
  std::printf("%s: %zu inputs (%zu seeds, %zu regressions): %zu accepted, %zu refused\n",
              target.c_str(), all.size(), seeds.size(), regressions.size(), accepted, refused);
}

TEST(FuzzReplay, ImageDecode) {
  replay("image_decode", fuzz::image_decode);
}

TEST(FuzzReplay, ListFile) {
  replay("list_file", fuzz::list_file);
}

TEST(FuzzReplay, Safetensors) {
  replay("safetensors", fuzz::safetensors);
}

}  // namespace
}  // namespace stoker
