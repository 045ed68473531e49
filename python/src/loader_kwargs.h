// SPDX-License-Identifier: Apache-2.0
// stoker.Loader's keyword arguments -> a LoaderConfig, made from the CLI's own option rows
// (tools/options/loader_options.h: each row names its Python argument, whether that is the flag
// inverted, its bounds and words), so names, defaults, bounds and meanings are the CLI's.
// A wrong type is a TypeError, a wrong value a ValueError, each naming the Python argument.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>

#include "loader/loader_config.h"
#include "loader/tuning/reader_tuner.h"

namespace stoker::py {

// What stoker.Loader's arguments make: the loader's configuration and, for reader="auto", the
// search's bounds (config.reader is then the reader it starts with, the default).
struct LoaderArgs {
  LoaderConfig config;
  std::optional<TunerLimits> tune;
};

// `kwargs`: the Python names (batch_size, reader, transform, ...: the loader rows' Python
// names, and stoker.Loader's own keep, rank, world_size, warn). Unknown names are a TypeError.
LoaderArgs loader_args(const pybind11::dict& kwargs);

// The CLI's defaults, under the Python names (for stoker.Loader's signature and docs).
pybind11::dict default_kwargs();

// Python name -> the CLI option it mirrors (None: Python only), as stoker.CLI_NAMES.
pybind11::dict cli_names();

// The loader rows Python has, as [{python, cli, inverted, default, example, min/max or lo/hi,
// words}]: the tests walk them.
pybind11::list option_rows();

// The CLI's idle-option rules (tools/options/idle_rules.h), which config_from_kwargs applies, as
// [{trigger, flag, example, idle: [...]}] by CLI option name: the tests walk them.
pybind11::list idle_rules_table();

}  // namespace stoker::py
