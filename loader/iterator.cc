// SPDX-License-Identifier: Apache-2.0
#include "loader/iterator.h"

#include <xxhash.h>

#include <charconv>

#include "common/error.h"

namespace stoker {

std::string ReaderPolicy::text() const {
  return kind == Kind::serial ? "serial" : "threads:" + std::to_string(workers);
}

ReaderPolicy parse_reader(const std::string& text) {
  ReaderPolicy p;
  if (text == "serial") return p;
  const std::string prefix = "threads:";
  if (text.rfind(prefix, 0) == 0) {
    const char* b = text.data() + prefix.size();
    const char* e = text.data() + text.size();
    int n = 0;
    const auto [end, ec] = std::from_chars(b, e, n);
    if (ec == std::errc() && end == e && n >= 1 && n <= 1024) {
      p.kind = ReaderPolicy::Kind::threads;
      p.workers = n;
      return p;
    }
  }
  fail("unknown reader '{}': expected serial or threads:N (N decode threads, 1..1024)", text);
}

Iterator::Iterator(const Index& index, const LoaderConfig& config)
    : ctx_(std::make_unique<LoaderContext>(index, config)) {
  if (config.prefetch == 0) fail("prefetch depth must be at least 1");
  if (config.reader.kind == ReaderPolicy::Kind::serial) {
    producer_ = make_serial_producer(*ctx_);
  } else {
    producer_ = make_threads_producer(*ctx_, config.reader.workers);
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
  consumed_ += batch.size;
  return &batch;
}

}  // namespace stoker
