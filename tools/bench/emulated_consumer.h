// SPDX-License-Identifier: Apache-2.0
// The one measuring loop of a consumer that holds each batch for an emulated accelerator's
// compute time (or for no time at all), shared by `stoker bench` and the study's emulated
// cells: batches epoch after epoch, each timed from the consumer's request to its arrival and
// to its release, each finished epoch's checksum, and the accelerator's account over the
// batches after the warm-up (train/emulated_accelerator.h, Utilisation: AU and the idle
// share, each defined there once). Not what a command keeps of each batch (its callback's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "common/measures.h"  // not_enough_data: the least data a verdict needs
#include "loader/iterator.h"
#include "loader/tuning/reader_tuner.h"
#include "train/emulated_accelerator.h"

namespace stoker {

// One batch as the consumer saw it (steady-clock ns): asked for at `asked_ns`, arrived at
// `arrived_ns`, released by the accelerator at `released_ns` (= arrived_ns without one).
struct ConsumedBatch {
  const Batch* batch = nullptr;
  size_t number = 0;  // in the run, from 0
  int64_t asked_ns = 0, arrived_ns = 0, released_ns = 0;
};

struct ConsumerRun {
  size_t batches = 0;               // at most this many (epoch after epoch from epoch 0)
  size_t warmup = 0;                // the first `warmup` batches are left out of the account
  int64_t deadline_ns = INT64_MAX;  // stop at the first batch boundary past it (one batch first)
  // --reader auto: batches are pulled through it (it times the consumer's steps and switches
  // the iterator's reader between them); null: from the iterator itself.
  ReaderTuner* tuner = nullptr;
};

struct ConsumerResult {
  size_t batches = 0;        // delivered
  bool interrupted = false;  // an interrupt ended the run at a batch boundary
  bool out_of_time = false;  // the deadline did
  // The accelerator over the batches after the warm-up: its window opens at the first timed
  // batch (window_open_ns, common/measures.h: its request, or with no warm-up its arrival,
  // its wait being start-up) and closes at the last release.
  Utilisation use;
};

// Pulls up to `run.batches` batches from `it`, each held by `accelerator` when enabled.
// `on_batch` sees every batch after its release; `on_epoch` each finished epoch and its
// checksum (Iterator::epoch_checksum). Stops early, at a batch boundary, on an interrupt or
// past the deadline.
ConsumerResult consume(Iterator& it, const EmulatedAccelerator& accelerator, const ConsumerRun& run,
                       const std::function<void(const ConsumedBatch&)>& on_batch,
                       const std::function<void(uint64_t epoch, uint64_t checksum)>& on_epoch);

}  // namespace stoker
