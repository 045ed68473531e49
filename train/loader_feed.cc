// SPDX-License-Identifier: Apache-2.0
#include "train/loader_feed.h"

#include "common/error.h"

namespace stoker {

LoaderFeed::LoaderFeed(Iterator& iterator, Position from, ReaderTuner* tuner)
    : it_(iterator), tuner_(tuner), position_(from) {}

HostBatch LoaderFeed::next() {
  for (int attempt = 0; attempt < 2; ++attempt) {
    // Positions are global (loader/sampler/sampler.h): the end is where all ranks' last batch ends.
    const uint64_t end = it_.sampler().position_after(it_.batches_per_epoch());
    if (!started_ || position_.index >= end) {
      if (started_) position_ = {position_.epoch + 1, 0};
      if (tuner_ != nullptr) {
        tuner_->start_epoch(position_.epoch, position_.index);
      } else {
        it_.start_epoch(position_.epoch, position_.index);
      }
      started_ = true;
    }
    const Batch* b = tuner_ != nullptr ? tuner_->next() : it_.next();
    if (b == nullptr) {  // the epoch ended: the loop above starts the next one
      position_.index = end;
      continue;
    }
    position_ = it_.position();
    last_ = b;
    timings_ = std::span<const SampleTiming>(b->timing.data(), b->size);
    return {b->data, b->labels.data(), int64_t(b->size), b->spec.height, b->spec.width};
  }
  fail("the dataset yields no full batch of {} (fewer samples than one batch?)",
       it_.config().sampler.batch_size);
}

}  // namespace stoker
