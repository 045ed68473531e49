// SPDX-License-Identifier: Apache-2.0
// The loader as a BatchFeed: full batches of f32 images from an Iterator, epoch after epoch,
// with the position (epoch, samples consumed) a checkpoint needs to resume exactly there.
#pragma once

#include <cstdint>

#include "loader/iterator.h"
#include "train/train_loop.h"

namespace stoker {

class LoaderFeed final : public BatchFeed {
 public:
  // The iterator must produce f32 and drop short batches (the backend is planned for one
  // batch size); STOKER_CHECK otherwise. Starts at `from` (a batch boundary).
  LoaderFeed(Iterator& iterator, Position from);
  StepBatch next() override;
  // Where the next batch starts: resuming from here replays exactly what follows.
  Position position() const { return position_; }

 private:
  Iterator& it_;
  Position position_;
  bool started_ = false;
};

}  // namespace stoker
