// SPDX-License-Identifier: Apache-2.0
// serial: the caller's thread reads, decodes and augments every sample of a batch when it
// asks for it. The study's baseline: nothing overlaps with the consumer's work.
#include "loader/producer.h"
#include "loader/sample_pipeline.h"

namespace stoker {

namespace {

class SerialProducer final : public Producer {
 public:
  explicit SerialProducer(LoaderContext& ctx)
      : ctx_(ctx),
        pool_(1, ctx.config.sampler.batch_size, ctx.config.output, ctx.config.memory),
        worker_(ctx.config.decode, ctx.source->clone()) {}

  void begin(size_t) override {}
  Batch& wait(size_t b) override {
    Batch& batch = pool_[0];
    begin_batch(ctx_, batch, b);
    for (size_t s = 0; s < batch.size; ++s) load_sample(ctx_, worker_, batch, s);
    finish_batch(batch);
    return batch;
  }
  void stop() override {}
  size_t pool_bytes() const override { return pool_.bytes(); }

 private:
  LoaderContext& ctx_;
  BatchPool pool_;
  Worker worker_;
};

}  // namespace

std::unique_ptr<Producer> make_serial_producer(LoaderContext& ctx) {
  return std::make_unique<SerialProducer>(ctx);
}

}  // namespace stoker
