// SPDX-License-Identifier: Apache-2.0
// The training loop: pull a batch, stage it on the backend, step, update with the scheduled
// learning rate, time every phase. It knows the Backend interface and a BatchFeed, nothing of
// oneDNN, cuDNN or the loader; a live progress line on stderr shows step, loss, images/s,
// data wait, ETA. Losses and the backend's phase times are collected every few steps (when
// the line draws, at least every Backend::kMaxPendingSteps, and at the end), so a device
// backend is never forced to synchronise per step.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "loader/batch.h"
#include "train/activity.h"
#include "train/backend.h"
#include "train/lr_schedule.h"
#include "train/sgd.h"

namespace stoker {

// Where batches come from: the loader (train/loader_feed.h) or random tensors.
class BatchFeed {
 public:
  virtual ~BatchFeed() = default;
  // The next batch, in the feed's InputSpec; it stays valid until the next call. Throws
  // stoker::Error when the data cannot be read under the loader's policy.
  virtual HostBatch next() = 0;
  // Per-sample loader timings of the batch last returned (empty for synthetic data).
  virtual std::span<const SampleTiming> timings() const { return {}; }
};

// Random images and labels, drawn once: times compute alone. f32: standard normal; u8:
// uniform bytes. NCHW or NHWC is only a matter of interpretation for random data. The images
// live in `memory` (the backend's host_memory(): pinned for a device, so that staging them is
// an asynchronous copy as a loader's batches are, not a synchronous pageable one).
class SyntheticFeed final : public BatchFeed {
 public:
  SyntheticFeed(int64_t batch, int64_t height, int64_t width, int classes, uint64_t seed,
                DType dtype = DType::f32, const HostMemory& memory = {});
  ~SyntheticFeed() override;
  SyntheticFeed(const SyntheticFeed&) = delete;
  SyntheticFeed& operator=(const SyntheticFeed&) = delete;
  HostBatch next() override { return {images_, labels_.data(), int64_t(labels_.size())}; }

 private:
  HostMemory memory_;
  void* images_ = nullptr;  // batch x 3 x height x width, f32 or u8
  std::vector<int32_t> labels_;
};

struct LoopConfig {
  int64_t steps = 0;       // optimiser steps to run now
  int64_t first_step = 0;  // global index of the first (a resumed run continues its schedule)
  SgdConfig sgd;
  LrSchedule schedule;
  int64_t images_per_step = 0;
  bool progress = true;  // the live line on stderr
  std::string label = "train";
  // Gap statistics (when the backend records activity) merge steps from this one (a count
  // from the first step of this run: the first steps pay for first touches). The timing
  // warm-up (--warmup), not the learning rate's (LrSchedule::warmup_steps).
  int64_t warmup = 0;
  // Global steps [trace_begin, trace_end) keep their activity records, loop intervals and
  // loader timings for a trace (LoopResult::trace); empty range: nothing kept.
  int64_t trace_begin = 0, trace_end = 0;
  // The backend was configured with record_activity: take its records and analyse the gaps.
  bool activity = false;
  // Called between steps, after every global step count that is a multiple of hook_every
  // (0: never), with that count; every step so far is collected first (its loss checked),
  // so the backend holds exactly the state after that step (periodic checkpoints,
  // validation). Its time is outside every step's window.
  int64_t hook_every = 0;
  std::function<void(int64_t steps_done)> hook;
  // Whether to stop after this step, given this process's interrupt_signal() (0: none): the
  // signal the job stops on, 0 to go on. Data-parallel ranks vote (a collective) so that all
  // stop after the same step, the unsignalled ones too. Null: this process alone.
  std::function<int(int signal_here)> agree_stop;
};

// One step. Seconds per phase: `wait` in BatchFeed::next(), `stage` in Backend::stage() (as
// the loop saw it); forward/backward/update as the backend measured them (collected later).
// Timestamps (steady clock, ns) delimit the loop's calls; the step's window is
// [begin_ns, end_ns): wait, stage, forward_backward, update.
struct StepRecord {
  double wait = 0, stage = 0, forward = 0, backward = 0, update = 0, total = 0;
  double backend_stage = 0;   // the backend's own figure for the input conversion / copy
  double allreduce_wait = 0;  // data parallelism: the exposed gradient all-reduce (StepTimes)
  double stage_compute = 0;   // StepTimes::stage_compute: the engine's part of the stage
  double engine_wall = 0;     // StepTimes::wall: an asynchronous engine's own step time (0: none)
  double host_enqueue = 0;    // StepResult::host_enqueue: the host's time in the backend's calls
  float loss = 0;
  double lr = 0;
  bool skipped = false;
  // The batch's image size (0: the feed does not say; the backend's configured one), and the
  // seconds Backend::reshape took before stage() (a re-plan when the size changed, else
  // nothing to speak of; inside total, outside stage).
  int64_t height = 0, width = 0;
  double reshape = 0;
  int64_t begin_ns = 0, wait_end_ns = 0, stage_end_ns = 0, fb_end_ns = 0, end_ns = 0;
  // Engine busy/idle, when the backend records activity (else all 0): inside the window
  // above on a CPU; on a device (BackendCaps::asynchronous), inside the device's own
  // window of this step (its first record to the next step's first, every stream; busy =
  // the union of its kernels; activity.h device_step_gaps), with gap_during_wait the idle
  // time that coincides with any of the loop's data waits.
  // `window`: the length of the window analysed (busy + gap); on a CPU the step's window
  // less its re-plan (`reshape`, which runs no primitive).
  double window = 0, busy = 0, gap = 0, gap_during_wait = 0, longest_gap = 0;
  uint64_t gaps = 0;
};

// What a trace needs from the steps in the trace window.
struct LoopTrace {
  std::vector<StepRecord> steps;  // with their global step numbers in `numbers`
  std::vector<int64_t> numbers;
  std::vector<ActivityRecord> activity;
  std::vector<std::vector<SampleTiming>> samples;  // per step: the batch's loader timings
};

struct LoopResult {
  std::vector<StepRecord> records;
  GapStats gaps;  // merged over the steps from warmup on (LoopConfig::activity):
                  // host windows on a CPU, the device's per-step windows on a device
  LoopTrace trace;
  // The backend's BackendCaps::asynchronous: whose clock a step's window is on.
  bool asynchronous = false;
  // Stopped early by an interrupt (common/interrupt.h): `records` holds the finished steps.
  bool interrupted = false;
};

// Runs config.steps steps, or fewer when interrupted() turns true (the current step finishes
// and is collected); a non-finite loss is a stoker::Error naming the step (a diverged run
// should stop, not write NaN weights), raised when the step is collected.
LoopResult train_loop(Backend& backend, BatchFeed& feed, const LoopConfig& config);

}  // namespace stoker
