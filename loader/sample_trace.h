// SPDX-License-Identifier: Apache-2.0
// The loader's side of a Chrome trace (common/trace_writer.h): one track per loader thread
// (a thread that reads and decodes; under processes:N a stoker-worker process's), with each
// sample's read, decode, augment and collate laid end to end from its start (the loader records
// durations, not each stage's own start). Shared by the train trace (train/loop_trace) and the
// loader-only bench trace (stoker bench --trace); it does not choose which batches to keep: the
// caller bounds them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/trace_writer.h"
#include "loader/batch.h"

namespace stoker {

// Events for batches[k][i] named "<stage> <numbers[k]>/<i>" on track (pid, SampleTiming::
// thread, the OS thread id), and, when any sample has a start time, process `pid` named
// `process_name` with a track "loader thread <id>" per thread (named "loader worker <id>"
// before the vocabulary settled). Samples without a start time (0) are left out.
void add_sample_tracks(TraceWriter& w, int pid, const std::string& process_name,
                       std::span<const std::vector<SampleTiming>> batches,
                       std::span<const int64_t> numbers);

}  // namespace stoker
