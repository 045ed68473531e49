// SPDX-License-Identifier: Apache-2.0
#include "loader/iterator.h"

#include <xxhash.h>

#include "common/error.h"

namespace stoker {

Iterator::Iterator(const Index& index, const LoaderConfig& config, std::unique_ptr<Source> source) {
  if (source && config.reader.kind == ReaderSpec::Kind::processes) {
    fail(
        "reader {}: worker processes make their own source from the configuration; a {} "
        "source object cannot be handed to them",
        config.reader.text(), source->name());
  }
  ctx_ = std::make_unique<LoaderContext>(index, config, std::move(source));
  if (config.prefetch == 0) fail("prefetch depth must be at least 1");
  switch (config.reader.kind) {
    case ReaderSpec::Kind::serial:
      reader_ = make_serial_reader(*ctx_);
      break;
    case ReaderSpec::Kind::threads:
      reader_ = make_threads_reader(*ctx_, config.reader.workers);
      break;
    case ReaderSpec::Kind::processes:
      reader_ = make_processes_reader(*ctx_, config.reader.workers);
      break;
    case ReaderSpec::Kind::uring:
      reader_ = make_uring_reader(*ctx_, config.reader.queue_depth, config.reader.workers);
      break;
  }
}

Iterator::~Iterator() {
  reader_->stop();
}

void Iterator::start_epoch(uint64_t epoch, uint64_t start) {
  reader_->stop();
  ctx_->sampler.set_epoch(epoch);
  next_batch_ = ctx_->sampler.batch_of(start);
  consumed_ = start;
  checksum_ = 0;
  started_ = true;
  reader_->begin(next_batch_);
}

const Batch* Iterator::next() {
  if (!started_) start_epoch(0);
  if (next_batch_ >= ctx_->sampler.batches()) return nullptr;
  Batch& batch = reader_->wait(next_batch_);
  STOKER_CHECK(batch.number == next_batch_ && batch.epoch == ctx_->sampler.epoch());
  checksum_ = XXH3_64bits_withSeed(&batch.checksum, sizeof batch.checksum, checksum_);
  ++next_batch_;
  consumed_ = ctx_->sampler.position_after(next_batch_);  // global: every rank's samples
  return &batch;
}

}  // namespace stoker
