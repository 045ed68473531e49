// SPDX-License-Identifier: Apache-2.0
// The loader's options, one row each (tools/options/option_table.h), shared by every subcommand
// that reads a dataset (bench, peek, probe, train, eval, study) and by stoker.Loader's keyword
// arguments, and their translation into a LoaderConfig. Each command registers only the
// options that mean something to it (eval has no --flip): one it does not register is an
// unknown option, a usage error, rather than a value silently ignored. Defaults are the
// library's own structs' (loader/loader_config.h), read here, never restated.
#pragma once

#include <CLI/CLI.hpp>

#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "loader/loader_config.h"
#include "loader/tuning/reader_tuner.h"
#include "tools/options/option_table.h"

namespace stoker {

struct LoaderOptions {
  size_t batch = SamplerConfig{}.batch_size;
  size_t prefetch = LoaderConfig{}.prefetch;
  std::string transform = "rrc";      // TransformConfig{}.kind by its short name
  int size = TransformConfig{}.size;  // output width; height too unless --size HxW set `height`
  int height = 0;                     // --size HxW: output height (0: square)
  std::array<float, 3> mean = OutputSpec{}.mean, std = OutputSpec{}.std;  // f32 normalisation
  double flip = TransformConfig{}.flip;
  std::string dtype = dtype_name(OutputSpec{}.dtype);
  std::string layout = layout_name(OutputSpec{}.layout);
  uint64_t seed = SamplerConfig{}.seed;
  bool no_shuffle = false;
  bool drop_last = false;
  std::string on_error = error_policy_name(LoaderConfig{}.on_error);
  uint64_t max_pixels = DecodeOptions{}.max_pixels;
  bool no_dct_scaling = false;
  bool no_partial_decode = false;
  bool no_decode = false;
  bool direct = false;
  std::string shard_order = "global";  // SamplerConfig{}.shard_order
  size_t shuffle_buffer = SamplerConfig{}.shuffle_buffer;
  std::string source = source_kind_name(SourceOptions{}.kind);
  std::string null_file;
  std::string jitter;  // "B,C,S,H" (empty: none)
  double grayscale = ColorConfig{}.grayscale;
  std::string resize_filter = "fast";  // TransformConfig{}.filter
  std::string size_schedule;           // loader/sampler/size_schedule.h; empty: the fixed --size
  // --reader: one reader, or a list where a command compares several (parse_reader_list).
  // Each command sets its default before registering (train: threads:<cpus>); empty: the
  // command decides when it runs (probe, study: from the dataset, --quick).
  std::string reader;
  // --auto-window: --reader auto's steps measured per candidate (loader/tuning/reader_tuner.h).
  size_t auto_window = TunerLimits{}.window;
  // --auto-search: how a search walks the candidates (tuning_candidates.h's SearchPlan).
  std::string auto_search = search_plan_name(TunerLimits{}.plan);

  int out_width() const { return size; }
  int out_height() const { return height > 0 ? height : size; }
  // "224" or "160x224" (HxW), as --size takes it.
  std::string size_text() const;

  // Registers every option but those flagged in `except` (a flag no row has is a CHECK); the
  // others keep their values.
  void add_to(CLI::App& app, const std::vector<std::string>& except = {});
  // Registers the options flagged in `only` (probe: --reader and --direct).
  void add_only(CLI::App& app, const std::vector<std::string>& only);
  // The one reader of a command that runs one (train, eval, stoker.Loader); stoker::UsageError
  // naming `who` when --reader names several, or auto (train asks is_auto_reader first).
  ReaderSpec one_reader(const char* who) const;
  // Validates and converts; the reader policy is set separately (bench runs several).
  LoaderConfig to_config() const;
  // --reader auto's bounds: at most auto_window steps measured per candidate, at least a
  // quarter as many (at least 2), an eighth as many (at least 1) left out after each switch;
  // the search plan of auto_search; the rest TunerLimits' defaults.
  TunerLimits tuner_limits() const;
};

// Every loader option, one row each (tools/options/option_table.h). Those that decide a training
// run's numbers are kept on --resume.
const std::vector<OptionRow<LoaderOptions>>& loader_option_table();

// The row whose flag (or alias) is `flag`; nullptr: none.
const OptionRow<LoaderOptions>* loader_option(const std::string& flag);

// --reader auto (loader/tuning/): the reader and prefetch depth chosen while the command runs,
// by the consumer's steps per second. train takes it alone, bench and study as one more entry
// of their lists; the commands of fixed readers (probe, eval, stoker.Loader) refuse it by name.
bool is_auto_reader(const std::string& text);
// bench's and study's list: each entry a fixed reader, or `auto` (nullopt), in the order
// given; the fixed runs between two autos parse as parse_reader_list's.
std::vector<std::optional<ReaderSpec>> parse_reader_choices(const std::string& text);

// --reader's text: readers separated by commas, where a bare count repeats the kind before it
// (processes:1,2,4) and A..B is every count between (threads:1..4; uring's are queue depths,
// its :T carries over). stoker::Error naming the part that is not a reader; a
// stoker::UsageError for `auto`, which only some commands take (parse_reader_choices).
std::vector<ReaderSpec> parse_reader_list(const std::string& text);

// "threads:<online cpus>": the reader of a command that runs one, unless told.
std::string default_reader();

// The options as given, by their JSON keys: what `stoker bench --json` and `stoker study`
// report in their context, and what a checkpoint stores (the kept ones).
nlohmann::json loader_options_json(const LoaderOptions& o);

}  // namespace stoker
