// SPDX-License-Identifier: Apache-2.0
// The one object a trainer pulls batches from. The reader (serial, threads:N,
// processes:N, uring:QD[:T]; loader/readers/reader_spec.h) is chosen at run time; whatever it is,
// batches come out in sampler order, with the same contents for the same seed, and the iterator
// keeps a checksum of each epoch's data. The reader and the prefetch depth may change at any
// batch boundary (switch_reader; `--reader auto`, loader/tuning/), mid-epoch included: batches
// are a function of the sampler's position alone, so what follows is what the old reader would
// have delivered.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loader/buffer_recycler.h"
#include "loader/index/index.h"
#include "loader/loader_config.h"
#include "loader/readers/reader.h"
#include "loader/readers/sample_pipeline.h"

namespace stoker {

class Iterator {
 public:
  // `index` must outlive the iterator. `source`: the prototype every loader thread clones
  // (tests, custom sources); null: make_source(index, config). processes:N refuses one (its
  // workers make their own from the configuration).
  Iterator(const Index& index, const LoaderConfig& config,
           std::unique_ptr<Source> source = nullptr);
  ~Iterator();

  // Begins `epoch` at global position `start` of it (a boundary of the global batch,
  // loader/sampler/sampler.h; non-zero to resume a run).
  void start_epoch(uint64_t epoch, uint64_t start = 0);
  // The next batch in sampler order, or nullptr when the epoch is done. The batch stays
  // valid until the next call. Throws stoker::Error under --on-error fail.
  const Batch* next();

  // From the next batch on, batches come from reader `spec` with `prefetch` batches ahead; the
  // batch next() last returned is no longer valid (as after start_epoch) unless retained. What
  // the old reader had prepared ahead is dropped and prepared again by the new one (at most
  // `prefetch` batches of work). Batches the consumer retains stay valid: the old reader is
  // stopped and kept, with its pool, until the last of them is released (so memory holds a
  // pool more for each switch whose batches are still held). Returns the reader that runs:
  // exactly `spec`, never a fallback. A reader that cannot start here (a worker process that
  // cannot start, an io_uring the kernel refuses, a kind the source or --decode gpu cannot
  // take) throws stoker::Error naming it, and the previous reader runs on.
  const ReaderSpec& switch_reader(const ReaderSpec& spec, size_t prefetch);

  // Keeps the batch next() last returned valid past the next call, until release(): for
  // consumers that hand batches on without a copy (the Python module). The pool has
  // config.keep extra buffers for such batches; once every buffer is retained, next()
  // throws rather than waits or grows. release() may be called from any thread, also after
  // start_epoch() or switch_reader(), never after the iterator is gone.
  void retain();
  void release(const Batch* batch);

  // Samples consumed so far by every rank together (the global position; this rank's own
  // when it is the only one): resuming from here continues with exactly the next batch.
  Position position() const { return {ctx_->sampler.epoch(), consumed_}; }
  // Checksum of the batches returned so far in this epoch (the whole epoch once next()
  // has returned nullptr).
  uint64_t epoch_checksum() const { return checksum_; }
  size_t batches_per_epoch() const { return ctx_->sampler.batches(); }
  const Sampler& sampler() const { return ctx_->sampler; }
  const BadSamples& bad_samples() const { return ctx_->bad; }
  // config().reader and config().prefetch follow switch_reader().
  const LoaderConfig& config() const { return ctx_->config; }
  const Index& index() const { return ctx_->index; }
  // The reader that runs: config().reader, or its fallback (uring:QD:T without io_uring
  // runs as threads:T; the reason went to stderr), or the last switch_reader()'s.
  const ReaderSpec& reader() const { return ctx_->reader; }
  size_t pool_bytes() const { return reader_->pool_bytes(); }
  // Reader::worker_cpu_seconds: the running reader's live worker processes' CPU time.
  double worker_cpu_seconds() const { return reader_->worker_cpu_seconds(); }

 private:
  // Makes reader_ for `runs` over ctx_->source.
  void make_reader(ReaderSpec runs);
  // switch_reader's work: the configuration says `asked` (what the user or the tuner asked
  // for) and `prefetch`; the source (where this iterator made it) is made again for `spec`,
  // which then runs from the next batch.
  void install(const ReaderSpec& spec, const ReaderSpec& asked, size_t prefetch);
  // Drops reader_ (stopped) for a switch, keeping it while the consumer holds its batches.
  void retire_reader();

  std::unique_ptr<LoaderContext> ctx_;
  bool own_source_ = true;  // ctx_->source was made here from the configuration
  // Where every reader's batch memory comes from (ctx_->config.memory goes through it), so a
  // switch reuses the last pool's buffers; declared before the readers, it outlives them.
  std::unique_ptr<BufferRecycler> recycler_;
  std::unique_ptr<Reader> reader_;
  // Who releases a retained batch: each reader has a generation, stamped on the batches
  // next() returns (Batch::reader_generation). A reader switched out while some of its
  // batches were retained is kept here, stopped, until its last one is released.
  struct Retired {
    std::unique_ptr<Reader> reader;
    uint64_t generation = 0;
    int held = 0;
  };
  std::mutex held_mu_;  // retained_, generation_ and retired_, against release() from any thread
  int retained_ = 0;    // reader_'s batches the consumer holds
  uint64_t generation_ = 1;
  std::vector<Retired> retired_;
  size_t next_batch_ = 0;
  uint64_t consumed_ = 0;  // global position
  bool started_ = false;
  uint64_t checksum_ = 0;  // chained over the epoch's batch checksums
};

}  // namespace stoker
