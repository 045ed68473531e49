// SPDX-License-Identifier: Apache-2.0
// One cell of the study: a loader over one dataset on one storage with one reader, feeding
// one consumer (emulated accelerator, CPU or GPU trainer) for `warmup` untimed then
// `steps` timed steps. Returns the measured half of the CELL object of
// docs/FORMATS.md ("study.json"): the sweep adds the names and the status.
// Not the sweep: which cells run, and what happens when one fails, is tools/study/cmd_study.cc.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "loader/index/index.h"
#include "loader/loader_config.h"
#include "loader/tuning/reader_tuner.h"
#include "tools/study/study_spec.h"

namespace stoker {

struct CellRun {
  int steps = 100;  // timed steps
  int warmup = 5;   // untimed steps before them (first touches, thread start-up)
};

// Throws stoker::Error when the cell cannot run (no device, no data, a broken source) and
// Interrupted when a signal asked the study to stop (polled between steps). With `tune`
// (--reader auto), a ReaderTuner chooses the reader from config.reader on: the cell then
// adds `threads` (the reader that ran last), `auto_reader` (its text) and `reader_tuning`.
nlohmann::json run_study_cell(const Index& index, const LoaderConfig& config,
                              const StudyConsumer& consumer, const CellRun& run,
                              const std::optional<TunerLimits>& tune = std::nullopt);

}  // namespace stoker
