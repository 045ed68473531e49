// SPDX-License-Identifier: Apache-2.0
#include "loader/sample_pipeline.h"

#include <xxhash.h>

#include "augment/crop.h"
#include "augment/resize.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/rng.h"
#include "loader/source.h"

namespace stoker {

LoaderContext::LoaderContext(const Index& idx, const LoaderConfig& cfg)
    : index(idx),
      config(cfg),
      sampler(idx.size(), cfg.sampler, idx.shard, idx.shards.size()),
      normalizer([&] {
        OutputSpec s = cfg.output;
        s.width = s.height = cfg.transform.size;
        return s;
      }()),
      recipe{cfg.transform, cfg.sampler.seed, cfg.no_decode, cfg.evict_after_read},
      bad(idx.size(), cfg.warn) {
  config.output = normalizer.spec;
  // The loader parallelises across samples; OpenCV's own pool inside resize would only
  // oversubscribe the cores the reader policy was given.
  cv::setNumThreads(0);
}

void begin_batch(const LoaderContext& ctx, Batch& batch, size_t b) {
  batch.size = ctx.sampler.batch_length(b);
  batch.epoch = ctx.sampler.epoch();
  batch.number = b;
}

void finish_batch(Batch& batch) {
  batch.finalize_checksum();
  batch.ready_ns = now_ns();
}

uint64_t try_sample(const LoaderContext& ctx, Worker& w, uint64_t epoch, uint32_t idx,
                    uint32_t attempt, void* dst, const PreRead* pre_read, SampleTiming& t) {
  w.path.assign(ctx.index.root);
  w.path += '/';
  w.path += ctx.index.relative_path(idx);
  return attempt_sample(ctx.recipe, ctx.normalizer, w, epoch, idx, attempt, dst, pre_read, t);
}

uint64_t attempt_sample(const SampleRecipe& recipe, const Normalizer& normalizer, Worker& w,
                        uint64_t epoch, uint32_t idx, uint32_t attempt, void* dst,
                        const PreRead* pre_read, SampleTiming& t) {
  const size_t dst_bytes = normalizer.spec.sample_bytes();
  const int64_t t0 = now_ns();
  std::span<const uint8_t> bytes;
  if (pre_read) {
    bytes = pre_read->bytes;
    t.read_ns += pre_read->read_ns;
  } else {
    bytes = read_file(w.path, w.file, recipe.evict_after_read);
    t.read_ns += now_ns() - t0;
  }
  t.bytes += bytes.size();
  if (recipe.no_decode) return XXH3_64bits(bytes.data(), bytes.size());
  const int64_t t1 = now_ns();
  const ImageInfo info = w.decoder.open(bytes, w.path);
  Rng rng(recipe.seed, epoch, idx, attempt);
  const CropPlan plan = plan_crop(recipe.transform, info.width, info.height, rng);
  const DecodedRegion& region = w.decoder.decode({plan.region, plan.out_w, plan.out_h});
  const int64_t t2 = now_ns();
  resize_region(region.rgb, plan.out_w, plan.out_h, w.resized);
  const int64_t t3 = now_ns();
  collate_sample(w.resized, plan.flip, normalizer, dst);
  const uint64_t hash = XXH3_64bits(dst, dst_bytes);
  const int64_t t4 = now_ns();
  t.decode_ns += t2 - t1;
  t.augment_ns += t3 - t2;
  t.collate_ns += t4 - t3;
  return hash;
}

void load_sample(LoaderContext& ctx, Worker& w, Batch& batch, size_t b, size_t slot,
                 const PreRead* pre_read) {
  const Sampler& sampler = ctx.sampler;
  const size_t pos = sampler.batch_begin(b) + slot;
  const size_t n = sampler.epoch_size();
  SampleTiming t{};
  t.attempts = 0;
  void* dst = batch.sample(slot);
  std::string last_error;
  for (size_t k = 0; k <= ctx.config.max_replacements; ++k) {
    const uint32_t idx = sampler.at((pos + k) % n);
    ++t.attempts;
    if (k > 0) ++ctx.bad.skipped;
    if (ctx.bad.known_bad(idx)) continue;
    uint64_t hash = 0;
    try {
      hash = try_sample(ctx, w, sampler.epoch(), idx, static_cast<uint32_t>(k), dst,
                        k == 0 ? pre_read : nullptr, t);
    } catch (const Error& e) {
      if (ctx.config.on_error == ErrorPolicy::fail) throw;
      last_error = e.what();
      ctx.bad.add(idx, ctx.index.path(idx), last_error);
      continue;
    }
    batch.labels[slot] = static_cast<int32_t>(ctx.index.label[idx]);
    batch.indices[slot] = idx;
    batch.sample_hash[slot] = hash;
    batch.timing[slot] = t;
    return;
  }
  fail(
      "{} samples in a row failed from position {} of epoch {} (last: {}); the dataset looks "
      "unreadable",
      ctx.config.max_replacements + 1, pos, sampler.epoch(),
      last_error.empty() ? "all known bad" : last_error);
}

}  // namespace stoker
