// SPDX-License-Identifier: Apache-2.0
// The trace of a window of training steps (train_loop's LoopTrace) as Chrome trace-event
// JSON: one track per loader thread (read, decode, augment, collate of each sample), one for
// the training loop (wait, stage, forward+backward, update, as the loop issued them), and
// one per compute stream (CPU primitives, GPU kernels and copies) from the backend's
// activity records. Loader stages are laid end to end from each sample's start: the loader
// records durations, not the stages' own start times.
#pragma once

#include <string>

#include "common/trace_writer.h"
#include "train/train_loop.h"

namespace stoker {

// Process 1 "stoker train": the loop is tid 1, compute stream s is tid 1000 + s. Process 2
// "loader": one track per loader thread, its OS thread id (a stoker-worker process: its pid).
inline constexpr int64_t kLoopTrack = 1;
inline constexpr int64_t kStreamTrackBase = 1000;

TraceWriter loop_trace(const LoopTrace& trace, const std::string& engine);

}  // namespace stoker
