// SPDX-License-Identifier: Apache-2.0
#include "loader/readers/sample_pipeline.h"

#include <unistd.h>

#include <cstring>

#include <xxhash.h>
#if defined(__x86_64__)
// libxxhash's runtime dispatch: the same XXH3 values, computed with AVX-512 or AVX2 where
// the CPU has them (the plain entry points are built for baseline SSE2): the sample hash
// over an f32 tensor was 7% of a sample's CPU time through SSE2.
#include <xxh_x86dispatch.h>
#endif

#include "augment/color_jitter.h"
#include "augment/crop.h"
#include "augment/resize.h"
#include "augment/resize_collate.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/rng.h"

namespace stoker {

LoaderContext::LoaderContext(const Index& idx, const LoaderConfig& cfg, std::unique_ptr<Source> src)
    : index(idx),
      config(cfg),
      sampler(
          [&] {
            // Named here, where the dataset is known (the sampler sees only a count).
            if (idx.size() == 0)
              fail("dataset '{}' holds no images: nothing to sample{}", idx.root,
                   idx.empty_classes.empty() ? ""
                                             : fmt::format(" (its {} class directories are empty)",
                                                           idx.empty_classes.size()));
            return idx.size();
          }(),
          cfg.sampler, idx.shard, idx.shards.size()),
      normalizer([&] {
        OutputSpec s = cfg.output;
        s.width = cfg.transform.out_width();
        s.height = cfg.transform.out_height();
        // A schedule's batches are square; the pool is sized for its largest side.
        if (cfg.size_schedule.active()) s.width = s.height = cfg.size_schedule.largest();
        // GPU decode: the CPU writes only the samples the GPU cannot take, as pixels the
        // GPU decoder normalises with the others.
        if (cfg.decode_device == DecodeDevice::gpu && !cfg.no_decode) {
          s.dtype = DType::u8;
          s.layout = Layout::nhwc;
        }
        return s;
      }()),
      recipe{cfg.transform, cfg.sampler.seed, cfg.no_decode,
             cfg.decode_device == DecodeDevice::gpu && !cfg.no_decode},
      bad(cfg.warn),
      source(src ? std::move(src) : make_source(idx, cfg.source, source_queue_depth(cfg.reader))),
      reader(cfg.reader) {
  config.output = normalizer.spec;
  if (recipe.gpu_decode) {
    check_gpu_decode(config);
    recipe.transform = config.transform;
  }
  // The loader parallelises across samples; OpenCV's own pool inside resize would only
  // oversubscribe the cores the reader was given.
  cv::setNumThreads(0);
}

void check_gpu_decode(LoaderConfig& config) {
  if (config.reader.kind == ReaderSpec::Kind::processes)
    fail(
        "--decode gpu needs a reader in this process (serial, threads:N, uring:QD[:T]): the "
        "workers of {} cannot hand their files' bytes to the GPU decoder",
        config.reader.text());
  if (config.transform.color.any())
    fail(
        "--decode gpu: colour jitter and random grayscale run on the CPU only; drop them or "
        "use --decode cpu");
  // The GPU resizes full-resolution windows with the antialiased filter: the samples the
  // CPU decodes instead are resized with the same filter.
  config.transform.filter = ResizeFilter::antialias;
  config.decode.allow_dct_scaling = false;  // as CPU decode runs the antialiased filter
}

int scheduled_side(const LoaderContext& ctx, size_t b) {
  const uint64_t epoch = ctx.sampler.epoch();
  return ctx.config.size_schedule.at(epoch, epoch * ctx.sampler.batches() + b);
}

SampleRecipe recipe_for(const SampleRecipe& recipe, const OutputSpec& spec) {
  SampleRecipe r = recipe;
  if (r.transform.out_width() == spec.width && r.transform.out_height() == spec.height) return r;
  r.transform.size = spec.width;
  r.transform.height = spec.height == spec.width ? 0 : spec.height;
  r.transform.resize = std::max(spec.width, spec.height) * 256 / 224;
  return r;
}

void begin_batch(const LoaderContext& ctx, Batch& batch, size_t b) {
  // Every buffer has room for the pool's (largest) size; this batch's may be smaller.
  batch.spec = ctx.normalizer.spec;
  if (ctx.config.size_schedule.active())
    batch.spec.width = batch.spec.height = scheduled_side(ctx, b);
  batch.size = ctx.sampler.batch_length(b);
  batch.epoch = ctx.sampler.epoch();
  batch.number = b;
  if (ctx.recipe.gpu_decode) {
    if (!batch.arena) {
      const size_t bytes =
          ctx.config.decode_arena ? ctx.config.decode_arena : batch.capacity * (size_t(512) << 10);
      batch.arena = std::make_shared<EncodedArena>(bytes, ctx.config.memory);
      batch.encoded.assign(batch.capacity, {});
    }
    batch.arena->used.store(0, std::memory_order_relaxed);
  }
}

void finish_batch(Batch& batch) {
  batch.finalize_checksum();
  batch.ready_ns = now_ns();
}

uint64_t attempt_sample(const SampleRecipe& recipe, const Normalizer& normalizer, SampleScratch& w,
                        const SampleLocation& where, uint64_t epoch, uint32_t idx, uint32_t attempt,
                        void* dst, const PreRead* pre_read, SampleTiming& t,
                        const EncodedSlot& encoded) {
  const size_t dst_bytes = size_t(3) * size_t(recipe.transform.out_width()) *
                           size_t(recipe.transform.out_height()) * normalizer.spec.element_bytes();
  const int64_t t0 = now_ns();
  t.start_ns = t0;
  t.thread = static_cast<int32_t>(gettid());
  std::span<const uint8_t> bytes;
  if (pre_read) {
    if (!pre_read->error.empty()) fail("{}", pre_read->error);
    bytes = pre_read->bytes;
    t.read_ns += pre_read->read_ns;
  } else {
    bytes = w.source->read(where, w.file);
    t.read_ns += now_ns() - t0;
  }
  t.bytes += bytes.size();
  if (recipe.no_decode) return XXH3_64bits(bytes.data(), bytes.size());
  const int64_t t1 = now_ns();
  const ImageInfo info = w.decoder.open(bytes, w.name);
  Rng rng(recipe.seed, epoch, idx, attempt);
  const CropPlan plan = plan_crop(recipe.transform, info.width, info.height, rng);
  if (recipe.gpu_decode) {
    STOKER_CHECK(encoded.sample && encoded.arena);
    EncodedSample& e = *encoded.sample;
    e = {};
    e.image_w = info.width;
    e.image_h = info.height;
    e.region = plan.region;
    e.out_w = plan.out_w;
    e.out_h = plan.out_h;
    e.flip = plan.flip;
    e.on = gpu_decode_refusal(info);
    if (e.on == DecodedOn::gpu) {
      uint8_t* at = encoded.arena->reserve(bytes.size(), e.offset);
      if (at) {
        std::memcpy(at, bytes.data(), bytes.size());
        e.length = static_cast<uint32_t>(bytes.size());
        t.decode_ns += now_ns() - t1;  // the header and the copy: all the CPU does
        const uint64_t crop[] = {uint64_t(plan.region.x),
                                 uint64_t(plan.region.y),
                                 uint64_t(plan.region.w),
                                 uint64_t(plan.region.h),
                                 uint64_t(plan.out_w),
                                 uint64_t(plan.out_h),
                                 plan.flip};
        return XXH3_64bits_withSeed(crop, sizeof crop, XXH3_64bits(bytes.data(), bytes.size()));
      }
      e.on = DecodedOn::arena_full;
    }
  }
  const DecodedRegion& region = w.decoder.decode({plan.region, plan.out_w, plan.out_h});
  const int64_t t2 = now_ns();
  if (recipe.transform.color.any()) {
    resize_region(region.rgb, plan.out_w, plan.out_h, w.resized, recipe.transform.filter);
    Rng rng_c = color_rng(recipe.seed, epoch, idx, attempt);
    apply_color(draw_color(recipe.transform.color, rng_c), w.resized);
    collate_sample(w.resized, plan.flip, normalizer, dst);
  } else {
    // Resize, flip, normalise and layout in one pass where it applies (the same bytes).
    resize_into_sample(region.rgb, plan.out_w, plan.out_h, plan.flip, recipe.transform.filter,
                       normalizer, dst, w.fused, w.resized);
  }
  const int64_t t3 = now_ns();
  const uint64_t hash = XXH3_64bits(dst, dst_bytes);
  const int64_t t4 = now_ns();
  t.decode_ns += t2 - t1;
  t.augment_ns += t3 - t2;
  t.collate_ns += t4 - t3;
  return hash;
}

void SlotChain::begin(const LoaderContext& ctx, size_t batch, size_t slot) {
  pos_ = ctx.sampler.batch_begin(batch) + slot;
  k_ = 0;
  idx_ = ctx.sampler.at(pos_ % ctx.sampler.epoch_size());
  t_ = SampleTiming{};
}

void SlotChain::failed(LoaderContext& ctx, const std::string& reason) {
  if (ctx.config.on_error == ErrorPolicy::fail) throw Error(reason);
  ctx.bad.add(idx_, ctx.index.path(idx_), reason, {ctx.sampler.epoch(), pos_, k_});
  if (k_ == ctx.config.max_replacements) {
    fail(
        "{} samples in a row failed from position {} of epoch {} (last: {}); the dataset looks "
        "unreadable",
        ctx.config.max_replacements + 1, pos_, ctx.sampler.epoch(), reason);
  }
  ++k_;
  idx_ = ctx.sampler.at((pos_ + k_) % ctx.sampler.epoch_size());
}

void SlotChain::filled(LoaderContext& ctx, Batch& batch, size_t slot, uint64_t hash) {
  t_.attempts = static_cast<uint32_t>(k_ + 1);
  batch.labels[slot] = static_cast<int32_t>(ctx.index.label[idx_]);
  batch.indices[slot] = idx_;
  batch.sample_hash[slot] = hash;
  batch.timing[slot] = t_;  // its attempts: the Iterator counts the replacements it delivers
}

void load_sample(LoaderContext& ctx, SampleScratch& w, Batch& batch, size_t slot,
                 const PreRead* pre_read) {
  SlotChain chain;
  chain.begin(ctx, batch.number, slot);
  const SampleRecipe recipe = recipe_for(ctx.recipe, batch.spec);
  while (true) {
    const uint32_t idx = chain.index();
    const SampleLocation where = locate_sample(ctx.index, idx, w.location);
    if (where.whole_file()) {
      w.name = w.location;
    } else {
      w.name = ctx.index.path(idx);
    }
    try {
      const uint64_t hash = attempt_sample(
          recipe, ctx.normalizer, w, where, ctx.sampler.epoch(), idx, chain.attempt(),
          batch.sample(slot), chain.attempt() == 0 ? pre_read : nullptr, chain.timing(),
          batch.arena ? EncodedSlot{&batch.encoded[slot], batch.arena.get()} : EncodedSlot{});
      chain.filled(ctx, batch, slot, hash);
      return;
    } catch (const SourceBroken&) {
      throw;  // the storage is gone, not this sample: no policy applies
    } catch (const Error& e) {
      chain.failed(ctx, e.what());  // rethrows under fail or when the chain ran out
    }
  }
}

}  // namespace stoker
