// SPDX-License-Identifier: Apache-2.0
// serial: the caller's thread reads, decodes and augments every sample of a batch when it
// asks for it. The study's baseline: nothing overlaps with the consumer's work.
#include <mutex>

#include "common/error.h"
#include "loader/readers/batch_order.h"
#include "loader/readers/reader.h"
#include "loader/readers/sample_pipeline.h"

namespace stoker {

namespace {

class SerialReader final : public Reader {
 public:
  // One buffer, plus the `keep` the consumer may retain.
  explicit SerialReader(LoaderContext& ctx)
      : ctx_(ctx),
        pool_(1 + ctx.config.keep, ctx.config.sampler.batch_size, ctx.config.output,
              ctx.config.memory),
        order_(pool_.count()),
        scratch_(ctx.config.decode, ctx.source->clone()) {}

  void begin(size_t) override {}
  Batch& wait(size_t b) override {
    size_t i = 0;
    {
      std::lock_guard lock(mu_);
      order_.release_held();
      if (!order_.can_start(1)) {
        fail(
            "all {} batch buffers are held by the consumer: release a batch before asking "
            "for the next one, or keep more (LoaderConfig::keep)",
            pool_.count());
      }
      i = order_.start();
    }
    Batch& batch = pool_[i];
    try {
      begin_batch(ctx_, batch, b);
      for (size_t s = 0; s < batch.size; ++s) {
        if (ctx_.config.poll) ctx_.config.poll();
        load_sample(ctx_, scratch_, batch, s);
      }
      finish_batch(batch);
    } catch (...) {
      std::lock_guard lock(mu_);
      order_.reset();  // the buffer goes back; the next wait starts batch b again
      throw;
    }
    std::lock_guard lock(mu_);
    order_.hand_out();
    return batch;
  }
  void stop() override {
    std::lock_guard lock(mu_);
    order_.reset();
  }
  void retain() override {
    std::lock_guard lock(mu_);
    order_.retain();
  }
  void release(const Batch& batch) override {
    std::lock_guard lock(mu_);
    order_.release(static_cast<size_t>(&batch - &pool_[0]));
  }
  size_t pool_bytes() const override { return pool_.bytes(); }

 private:
  LoaderContext& ctx_;
  BatchPool pool_;
  std::mutex mu_;  // order_: release() may come from any thread
  BatchOrder order_;
  SampleScratch scratch_;
};

}  // namespace

std::unique_ptr<Reader> make_serial_reader(LoaderContext& ctx) {
  return std::make_unique<SerialReader>(ctx);
}

}  // namespace stoker
