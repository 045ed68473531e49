// SPDX-License-Identifier: Apache-2.0
#include "train/loader_feed.h"

#include "common/error.h"

namespace stoker {

LoaderFeed::LoaderFeed(Iterator& iterator, Position from) : it_(iterator), position_(from) {
  const LoaderConfig& c = it_.config();
  STOKER_CHECK_MSG(c.output.dtype == DType::f32 && c.sampler.drop_last,
                   "the training feed needs f32 batches without a short last batch");
}

StepBatch LoaderFeed::next() {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!started_ || position_.index >= it_.batches_per_epoch() * it_.config().sampler.batch_size) {
      if (started_) position_ = {position_.epoch + 1, 0};
      it_.start_epoch(position_.epoch, position_.index);
      started_ = true;
    }
    const Batch* b = it_.next();
    if (b == nullptr) {  // the epoch ended: the loop above starts the next one
      position_.index = it_.batches_per_epoch() * it_.config().sampler.batch_size;
      continue;
    }
    position_.index += b->size;
    return {static_cast<const float*>(b->data), b->labels.data()};
  }
  fail("the dataset yields no full batch of {} (fewer samples than one batch?)",
       it_.config().sampler.batch_size);
}

}  // namespace stoker
