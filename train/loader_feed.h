// SPDX-License-Identifier: Apache-2.0
// The loader as a BatchFeed: full batches from an Iterator in the loader's own format (f32
// normalised or u8 pixels, NCHW or NHWC), epoch after epoch,
// with the position (epoch, samples consumed) a checkpoint needs to resume exactly there.
#pragma once

#include <cstdint>

#include "loader/iterator.h"
#include "loader/tuning/reader_tuner.h"
#include "train/train_loop.h"

namespace stoker {

class LoaderFeed final : public BatchFeed {
 public:
  // A training loop's iterator drops short batches (training_iterator: the backend is planned
  // for one batch size and refuses another count); an evaluation pass's keeps its short last
  // one (evaluation_iterator), handed out with count below the batch for its consumer to pad.
  // Starts at `from` (a batch boundary). With `tuner` (--reader auto, over `iterator`),
  // batches are pulled through it: it times the loop's steps, from one request to the next,
  // and may switch the reader between them.
  LoaderFeed(Iterator& iterator, Position from, ReaderTuner* tuner = nullptr);
  HostBatch next() override;
  std::span<const SampleTiming> timings() const override { return timings_; }
  // Where the next batch starts: resuming from here replays exactly what follows.
  Position position() const { return position_; }
  // The loader's batch the last next() returned (its encoded samples under --decode gpu).
  const Batch* last_batch() const { return last_; }
  Iterator& iterator() { return it_; }

 private:
  Iterator& it_;
  ReaderTuner* tuner_;
  Position position_;
  bool started_ = false;
  std::span<const SampleTiming> timings_;
  const Batch* last_ = nullptr;
};

}  // namespace stoker
