// SPDX-License-Identifier: Apache-2.0
#include "loader/iterator.h"

#include <xxhash.h>

#include <mutex>

#include "common/error.h"
#include "common/log.h"
#include "loader/sources/nfs_url.h"

namespace stoker {

namespace {

void say_once(const std::string& text) {
  static std::once_flag once;
  std::call_once(once, [&] { log_note(text); });
}

// The source this iterator makes for reader `runs` from the configuration. `--source auto` for
// a reader that needs an asynchronous source is io_uring over local files and shards
// (make_source). Where io_uring is missing (old kernel, seccomp, a build without liburing), with
// `fallback` the reader runs as threads:T over the synchronous automatic source instead, and
// says so once: the one fallback, and only for a source the user did not name. Without
// `fallback` (a switch asks for exactly this reader) that throws.
std::unique_ptr<Source> source_for(const Index& index, const LoaderConfig& config, ReaderSpec& runs,
                                   bool fallback) {
  if (needs_async_source(runs) && config.source.kind == SourceOptions::Kind::automatic &&
      !is_nfs_url(index.root)) {
    try {
      return make_source(index, config.source, source_queue_depth(runs));
    } catch (const Error& e) {
      if (!fallback) fail("reader {}: {}", runs.text(), e.what());
      say_once(fmt::format("{}: uring readers fall back to pread in {} decode threads", e.what(),
                           runs.threads));
      runs = {ReaderSpec::Kind::threads, runs.threads, 0};
    }
  }
  return make_source(index, config.source, source_queue_depth(runs));
}

void refuse_source_object(const ReaderSpec& reader, const Source& source) {
  if (reader.kind == ReaderSpec::Kind::processes) {
    fail(
        "reader {}: worker processes make their own source from the configuration; a {} "
        "source object cannot be handed to them",
        reader.text(), source.name());
  }
}

}  // namespace

Iterator::Iterator(const Index& index, const LoaderConfig& config, std::unique_ptr<Source> source) {
  if (source) refuse_source_object(config.reader, *source);
  own_source_ = !source;
  ReaderSpec runs = config.reader;
  if (own_source_) source = source_for(index, config, runs, /*fallback=*/true);
  ctx_ = std::make_unique<LoaderContext>(index, config, std::move(source));
  recycler_ = std::make_unique<BufferRecycler>(config.memory);
  ctx_->config.memory = recycler_->memory();
  if (config.prefetch == 0) fail("prefetch depth must be at least 1");
  make_reader(runs);
}

void Iterator::make_reader(ReaderSpec runs) {
  ctx_->reader = runs;
  if (needs_async_source(runs) && !ctx_->source->asynchronous()) {
    usage_fail(
        "reader {} keeps reads in flight and needs an asynchronous source (auto, uring, null, "
        "nfs); the {} source reads one sample at a time: use --source auto or uring with it, or "
        "a reader that reads one sample at a time (serial, threads:N, processes:N)",
        runs.text(), ctx_->source->name());
  }
  switch (runs.kind) {
    case ReaderSpec::Kind::serial:
      reader_ = make_serial_reader(*ctx_);
      break;
    case ReaderSpec::Kind::threads:
      reader_ = make_threads_reader(*ctx_, runs.threads);
      break;
    case ReaderSpec::Kind::processes:
      reader_ = make_processes_reader(*ctx_, runs.threads);
      break;
    case ReaderSpec::Kind::uring:
      reader_ = make_uring_reader(*ctx_, runs.threads);
      break;
  }
}

void Iterator::install(const ReaderSpec& spec, const ReaderSpec& asked, size_t prefetch) {
  ctx_->config.reader = asked;
  ctx_->config.prefetch = prefetch;
  if (own_source_) {
    ReaderSpec runs = spec;
    ctx_->source = source_for(ctx_->index, ctx_->config, runs, /*fallback=*/false);
  }
  make_reader(spec);
  if (started_ && next_batch_ < ctx_->sampler.batches()) reader_->begin(next_batch_);
}

const ReaderSpec& Iterator::switch_reader(const ReaderSpec& spec, size_t prefetch) {
  if (prefetch == 0) fail("prefetch depth must be at least 1");
  if (!own_source_) refuse_source_object(spec, *ctx_->source);
  if (ctx_->recipe.gpu_decode) {
    LoaderConfig c = ctx_->config;
    c.reader = spec;
    check_gpu_decode(c);
  }
  // What runs now, to go back to when the new reader cannot start.
  const ReaderSpec was = ctx_->reader, was_asked = ctx_->config.reader;
  const size_t was_prefetch = ctx_->config.prefetch;
  reader_->stop();
  retire_reader();
  try {
    install(spec, spec, prefetch);
  } catch (const Error&) {
    reader_.reset();
    install(was, was_asked, was_prefetch);
    throw;
  }
  return ctx_->reader;
}

void Iterator::retire_reader() {
  std::lock_guard<std::mutex> lock(held_mu_);
  if (retained_ > 0) retired_.push_back({std::move(reader_), generation_, retained_});
  reader_.reset();
  retained_ = 0;
  // From here no release() touches reader_ (none holds a batch of the next generation before
  // next() returns one), so install() may replace it without the lock.
  ++generation_;
}

void Iterator::retain() {
  std::lock_guard<std::mutex> lock(held_mu_);
  reader_->retain();
  ++retained_;
}

void Iterator::release(const Batch* batch) {
  std::lock_guard<std::mutex> lock(held_mu_);
  if (batch->reader_generation == generation_) {
    reader_->release(*batch);
    --retained_;
    return;
  }
  for (auto r = retired_.begin(); r != retired_.end(); ++r) {
    if (r->generation != batch->reader_generation) continue;
    r->reader->release(*batch);
    if (--r->held == 0) retired_.erase(r);  // its pool goes with it
    return;
  }
  STOKER_CHECK_MSG(false, "a batch released twice, or of no reader of this iterator");
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
  batch.reader_generation = generation_;  // release() finds its reader by it
  // Replacements are counted as batches are delivered, not as readers fill them: a batch a
  // switched-out reader prepared ahead is prepared again, and counts once.
  for (size_t i = 0; i < batch.size; ++i) ctx_->bad.skipped += batch.timing[i].attempts - 1;
  ++next_batch_;
  consumed_ = ctx_->sampler.position_after(next_batch_);  // global: every rank's samples
  return &batch;
}

}  // namespace stoker
