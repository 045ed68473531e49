// SPDX-License-Identifier: Apache-2.0
// The narrow interface behind the iterator: a reader (what --reader chooses: serial,
// threads:N, processes:N, uring:QD; readers/reader_<kind>.cc) fills batches of the current
// epoch, in any order, into buffers it owns; the iterator hands them out in order. The hooks:
#pragma once

#include <cstddef>
#include <memory>

#include "loader/batch.h"

namespace stoker {

struct LoaderContext;
struct ReaderSpec;

class Reader {
 public:
  virtual ~Reader() = default;
  // Start producing batches first, first+1, ... of the sampler's current epoch.
  virtual void begin(size_t first) = 0;
  // Block until batch `b` (always the next in order) is complete and return it. The batch
  // returned by the previous call may be reused from now on. Rethrows a sample's error.
  virtual Batch& wait(size_t b) = 0;
  // Abandon work in flight and return once no loader thread touches any buffer or the sampler.
  virtual void stop() = 0;
  // The consumer keeps the batch wait() last returned past the next wait(), until
  // release(); its buffer is not reused before. Consumer's thread.
  virtual void retain() = 0;
  // A retained batch may be reused. Any thread.
  virtual void release(const Batch& batch) = 0;
  // Bytes of batch memory this reader holds.
  virtual size_t pool_bytes() const = 0;
  // CPU seconds of its live worker processes so far (processes:N), which the process's own
  // figure leaves out until they are reaped; 0 for readers in this process. Any thread.
  virtual double worker_cpu_seconds() const { return 0; }
};

std::unique_ptr<Reader> make_serial_reader(LoaderContext& ctx);
std::unique_ptr<Reader> make_threads_reader(LoaderContext& ctx, int threads);
std::unique_ptr<Reader> make_processes_reader(LoaderContext& ctx, int processes);
// ctx.source must be asynchronous (needs_async_source; the Iterator refuses the others).
std::unique_ptr<Reader> make_uring_reader(LoaderContext& ctx, int threads);

}  // namespace stoker
