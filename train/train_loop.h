// SPDX-License-Identifier: Apache-2.0
// The training loop: pull a batch, step the backend, update with the scheduled learning rate,
// time every phase. It knows the Backend interface and a BatchFeed, nothing of oneDNN, cuDNN
// or the loader; a live progress line on stderr shows step, loss, images/s, data wait, ETA.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "train/backend.h"
#include "train/lr_schedule.h"
#include "train/sgd.h"

namespace stoker {

// One full batch for a step: images as the backend was configured for, labels.
struct StepBatch {
  const float* images = nullptr;
  const int32_t* labels = nullptr;
};

// Where batches come from: the loader (train/loader_feed.h) or random tensors.
class BatchFeed {
 public:
  virtual ~BatchFeed() = default;
  // The next batch; it stays valid until the next call. Throws stoker::Error when the data
  // cannot be read under the loader's policy.
  virtual StepBatch next() = 0;
};

// Random images (standard normal) and labels, drawn once: times compute alone.
class SyntheticFeed final : public BatchFeed {
 public:
  SyntheticFeed(int64_t batch, int64_t height, int64_t width, int classes, uint64_t seed);
  StepBatch next() override { return {images_.data(), labels_.data()}; }

 private:
  std::vector<float> images_;
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
};

// Seconds per phase of one step. `wait` is the time spent in BatchFeed::next().
struct StepRecord {
  double wait = 0, forward = 0, backward = 0, update = 0, total = 0;
  float loss = 0;
  double lr = 0;
};

// Runs config.steps steps; a non-finite loss is a stoker::Error naming the step (a diverged
// run should stop, not write NaN weights).
std::vector<StepRecord> train_loop(Backend& backend, BatchFeed& feed, const LoopConfig& config);

}  // namespace stoker
