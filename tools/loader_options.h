// SPDX-License-Identifier: Apache-2.0
// The loader's command-line options, shared by every subcommand that reads a dataset
// (bench, peek, train, eval), and their translation into a LoaderConfig. Each command
// registers only the options that mean something to it (eval has no --flip): one it does
// not register is an unknown option, a usage error, rather than a value silently ignored.
#pragma once

#include <CLI/CLI.hpp>

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loader/loader_config.h"
#include "tools/option_table.h"

namespace stoker {

// One bit per option, for the selection a command registers.
enum LoaderOption : uint32_t {
  kBatch = 1u << 0,
  kPrefetch = 1u << 1,
  kTransform = 1u << 2,
  kSize = 1u << 3,
  kFlip = 1u << 4,
  kDtype = 1u << 5,
  kLayout = 1u << 6,
  kSeed = 1u << 7,
  kNoShuffle = 1u << 8,
  kDropLast = 1u << 9,
  kOnError = 1u << 10,
  kMaxPixels = 1u << 11,
  kNoDctScaling = 1u << 12,
  kNoPartialDecode = 1u << 13,
  kNoDecode = 1u << 14,
  kDirect = 1u << 15,
  kShardOrder = 1u << 16,
  kShuffleBuffer = 1u << 17,
  kSource = 1u << 18,
  kNullFile = 1u << 19,
  kNormalize = 1u << 20,  // --mean, --std
  kJitter = 1u << 21,
  kGrayscale = 1u << 22,
  kResizeFilter = 1u << 23,
  kSizeSchedule = 1u << 24,  // --size-schedule
};
constexpr uint32_t kAllLoaderOptions = (1u << 25) - 1;

struct LoaderOptions {
  size_t batch = 64;
  size_t prefetch = 2;
  std::string transform = "rrc";
  int size = 224;  // output width; height too unless --size HxW set `height`
  int height = 0;  // --size HxW: output height (0: square)
  std::array<float, 3> mean = OutputSpec{}.mean, std = OutputSpec{}.std;  // f32 normalisation
  double flip = 0.5;
  std::string dtype = "f32";
  std::string layout = "nchw";
  uint64_t seed = 0;
  bool no_shuffle = false;
  bool drop_last = false;
  std::string on_error = "skip";
  uint64_t max_pixels = DecodeOptions{}.max_pixels;
  bool no_dct_scaling = false;
  bool no_partial_decode = false;
  bool no_decode = false;
  bool direct = false;
  std::string shard_order = "global";
  size_t shuffle_buffer = 1000;
  std::string source = "auto";
  std::string null_file;
  std::string jitter;  // "B,C,S,H" (empty: none)
  double grayscale = 0;
  std::string resize_filter = "fast";
  std::string size_schedule;  // loader/sampler/size_schedule.h; empty: the fixed --size

  int out_width() const { return size; }
  int out_height() const { return height > 0 ? height : size; }
  // "224" or "160x224" (HxW), as --size takes it.
  std::string size_text() const;

  // Registers the options in `which` (LoaderOption bits); the others keep their values.
  void add_to(CLI::App& app, uint32_t which);
  // Validates and converts; the reader policy is set separately (bench runs several).
  LoaderConfig to_config() const;
};

// Every loader option, one row each (tools/option_table.h); a row's group is its LoaderOption
// bit. Those that decide a training run's numbers are kept on --resume.
const std::vector<OptionRow<LoaderOptions>>& loader_option_table();

// The options as given, by their JSON keys: what `stoker bench --json` and `stoker study`
// report in their context, and what a checkpoint stores (the kept ones).
nlohmann::json loader_options_json(const LoaderOptions& o);

}  // namespace stoker
