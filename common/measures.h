// SPDX-License-Identifier: Apache-2.0
// The derived figures Stoker reports, each defined here once, with the name docs/FORMATS.md
// ("Measures") gives it: every command (bench, study, train) computes them with these
// functions from what its own loop timed, so one run gets one figure whatever printed it.
// Plain arithmetic on times and counts: the loops that time things are elsewhere
// (tools/bench/emulated_consumer.h, train/train_loop.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace stoker {

// images/s over a window: images / seconds; 0 over an empty window.
double images_per_s(double images, double seconds);

// The data-wait share: the time the consumer was blocked waiting for its batches / the
// window; 0 over an empty window.
double data_wait_share(double wait_s, double window_s);

// Accelerator utilisation (AU, MLPerf Storage's): the accelerator's compute time / the
// window, 0 over an empty window. Compute is the time the accelerator is busy: an emulated
// accelerator's nominal compute (images x seconds per image, its oversleep left out: a real
// accelerator is done on time), a trainer's step_compute below.
double accelerator_utilisation(double compute_s, double window_s);

// The idle share: the share of the window in which the accelerator held no batch,
// 1 - held / window (never negative); 0 over an empty window. `held_s` is the time it
// really held batches: an emulated accelerator's compute plus its oversleep, which is time
// it was not idle, so AU + idle share + oversleep / window = 1.
double idle_share(double held_s, double window_s);

// A trainer step's compute: the engine's busy time (the union of its primitive or kernel
// intervals) when it was recorded, else the backend's forward + backward + update.
double step_compute(double busy_s, double forward_s, double backward_s, double update_s);

// The gap remainder of a step or of a window: wall - wait - stage - compute, never negative:
// the time the engine neither computed nor waited for data nor staged it (copied it in).
double gap_remainder(double wall_s, double wait_s, double stage_s, double compute_s);

// Where a measuring window opens (steady-clock ns): at the first timed batch's request, or,
// with no warm-up before it, at its arrival: its wait is start-up (MLPerf Storage leaves the
// first step's I/O out of AU's run time).
int64_t window_open_ns(size_t warmup, int64_t first_asked_ns, int64_t first_arrived_ns);

// The least data a verdict needs: AU "met" or "not met", or a steady state called a rate,
// only over a window of at least max(kMinJudgedBatches, kPrefetchMultiple x prefetch)
// batches and kMinJudgedSeconds. Fewer, and the batches the loader prepared during start-up
// (its prefetch) arrive without a wait and hide its real rate: one batch of 64 gave AU 100%
// where 5 epochs gave 44% (issue 47).
constexpr size_t kMinJudgedBatches = 10;
constexpr size_t kPrefetchMultiple = 4;
constexpr double kMinJudgedSeconds = 0.5;
// "" when `batches` over `seconds` are enough for a verdict; else "not enough data: ..."
// saying what there was and what a verdict needs.
std::string not_enough_data(size_t batches, double seconds, size_t prefetch);

}  // namespace stoker
