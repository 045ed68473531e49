// SPDX-License-Identifier: Apache-2.0
#include "tools/bench/emulated_consumer.h"

#include "common/clock.h"
#include "common/error.h"
#include "common/interrupt.h"

namespace stoker {

ConsumerResult consume(Iterator& it, const EmulatedAccelerator& accelerator, const ConsumerRun& run,
                       const std::function<void(const ConsumedBatch&)>& on_batch,
                       const std::function<void(uint64_t epoch, uint64_t checksum)>& on_epoch) {
  ConsumerResult r;
  const size_t per_epoch = it.batches_per_epoch();
  if (run.batches == 0 || per_epoch == 0) return r;
  uint64_t epoch = 0;
  size_t in_epoch = 0;
  int64_t window_begin = 0;
  auto start_epoch = [&](uint64_t e) {
    if (run.tuner != nullptr) {
      run.tuner->start_epoch(e);
    } else {
      it.start_epoch(e);
    }
  };
  start_epoch(0);
  while (r.batches < run.batches) {
    if (interrupted()) {
      r.interrupted = true;
      break;
    }
    if (r.batches > 0 && now_ns() >= run.deadline_ns) {
      r.out_of_time = true;
      break;
    }
    if (in_epoch == per_epoch) {
      on_epoch(epoch, it.epoch_checksum());
      start_epoch(++epoch);
      in_epoch = 0;
    }
    ConsumedBatch c;
    c.number = r.batches;
    c.asked_ns = now_ns();
    c.batch = run.tuner != nullptr ? run.tuner->next() : it.next();
    STOKER_CHECK(c.batch != nullptr);
    c.arrived_ns = now_ns();
    if (accelerator.enabled()) accelerator.compute(c.batch->size);
    c.released_ns = accelerator.enabled() ? now_ns() : c.arrived_ns;
    if (c.number == run.warmup) window_begin = window_open_ns(run.warmup, c.asked_ns, c.arrived_ns);
    if (c.number >= run.warmup) {
      // With no warm-up the first batch's wait is start-up, outside the window.
      if (c.number > 0) r.use.wait_ns += c.arrived_ns - c.asked_ns;
      r.use.compute_ns += accelerator.compute_ns(c.batch->size);
      r.use.held_ns += c.released_ns - c.arrived_ns;
      r.use.window_ns = c.released_ns - window_begin;
    }
    ++r.batches;
    ++in_epoch;
    on_batch(c);
  }
  if (in_epoch == per_epoch) on_epoch(epoch, it.epoch_checksum());
  return r;
}

}  // namespace stoker
