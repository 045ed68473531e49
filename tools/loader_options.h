// SPDX-License-Identifier: Apache-2.0
// The loader's command-line options, shared by every subcommand that reads a dataset
// (bench, peek; later train and eval), and their translation into a LoaderConfig.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "loader/loader_config.h"

namespace stoker {

struct LoaderOptions {
  size_t batch = 64;
  size_t prefetch = 2;
  std::string transform = "rrc";
  int size = 224;
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

  void add_to(CLI::App& app);
  // Validates and converts; the reader policy is set separately (bench runs several).
  LoaderConfig to_config() const;
};

}  // namespace stoker
