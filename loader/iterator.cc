// SPDX-License-Identifier: Apache-2.0
#include "loader/iterator.h"

#include <xxhash.h>

#include "common/error.h"

namespace stoker {

Iterator::Iterator(const Index& index, const LoaderConfig& config, std::unique_ptr<Source> source) {
  if (source && config.reader.kind == ReaderPolicy::Kind::processes) {
    fail(
        "reader {}: worker processes make their own source from the configuration; a {} "
        "source object cannot be handed to them",
        config.reader.text(), source->name());
  }
  ctx_ = std::make_unique<LoaderContext>(index, config, std::move(source));
  if (config.prefetch == 0) fail("prefetch depth must be at least 1");
  switch (config.reader.kind) {
    case ReaderPolicy::Kind::serial:
      producer_ = make_serial_producer(*ctx_);
      break;
    case ReaderPolicy::Kind::threads:
      producer_ = make_threads_producer(*ctx_, config.reader.workers);
      break;
    case ReaderPolicy::Kind::processes:
      producer_ = make_processes_producer(*ctx_, config.reader.workers);
      break;
    case ReaderPolicy::Kind::uring:
      producer_ = make_uring_producer(*ctx_, config.reader.queue_depth, config.reader.workers);
      break;
  }
}

Iterator::~Iterator() {
  producer_->stop();
}

void Iterator::start_epoch(uint64_t epoch, uint64_t start) {
  producer_->stop();
  ctx_->sampler.set_epoch(epoch);
  next_batch_ = ctx_->sampler.batch_of(start);
  consumed_ = start;
  checksum_ = 0;
  started_ = true;
  producer_->begin(next_batch_);
}

const Batch* Iterator::next() {
  if (!started_) start_epoch(0);
  if (next_batch_ >= ctx_->sampler.batches()) return nullptr;
  Batch& batch = producer_->wait(next_batch_);
  STOKER_CHECK(batch.number == next_batch_ && batch.epoch == ctx_->sampler.epoch());
  checksum_ = XXH3_64bits_withSeed(&batch.checksum, sizeof batch.checksum, checksum_);
  ++next_batch_;
  consumed_ = ctx_->sampler.position_after(next_batch_);  // global: every rank's samples
  return &batch;
}

}  // namespace stoker
