// SPDX-License-Identifier: Apache-2.0
#include "tools/loader_options.h"

#include "tools/option_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace stoker {

namespace {

// "N" -> width N, height 0 (square); "HxW" -> width W, height H. Each side in 8..8192.
void parse_size(const std::string& s, int& width, int& height) {
  const auto side = [&](const std::string& part) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || v < 8 || v > 8192)
      throw CLI::ValidationError(
          "--size",
          fmt::format("'{}' is not an integer from 8 to 8192 (or HxW, each side one)", s));
    return v;
  };
  const size_t x = s.find_first_of("xX");
  if (x == std::string::npos) {
    width = side(s);
    height = 0;
  } else {
    height = side(s.substr(0, x));
    width = side(s.substr(x + 1));
    if (height == width) height = 0;
  }
}

// "R,G,B": three finite floats (positive ones for --std).
std::array<float, 3> parse_triple(const char* option, const std::string& s, bool positive) {
  std::array<float, 3> v{};
  size_t at = 0;
  for (int c = 0; c < 3; ++c) {
    const size_t end = c < 2 ? s.find(',', at) : s.size();
    bool ok = end != std::string::npos && end > at;
    if (ok) {
      const std::string part = s.substr(at, end - at);
      size_t used = 0;
      try {
        v[size_t(c)] = std::stof(part, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      ok = used == part.size() && std::isfinite(v[size_t(c)]) && (!positive || v[size_t(c)] > 0);
    }
    if (!ok)
      throw CLI::ValidationError(option, fmt::format("'{}': expected three {}numbers R,G,B", s,
                                                     positive ? "positive " : ""));
    at = end + 1;
  }
  return v;
}

}  // namespace

std::string LoaderOptions::size_text() const {
  return height > 0 ? fmt::format("{}x{}", height, size) : std::to_string(size);
}

void LoaderOptions::add_to(CLI::App& app, uint32_t which) {
  const auto want = [which](LoaderOption o) { return (which & o) != 0; };
  if (want(kBatch))
    app.add_option("--batch", batch, "Samples per batch")
        ->capture_default_str()
        ->check(integer_in(1, 1u << 20));
  if (want(kPrefetch))
    app.add_option("--prefetch", prefetch,
                   "Batches prepared ahead of the consumer (all readers but serial)")
        ->capture_default_str()
        ->check(integer_in(1, 1024));
  if (want(kTransform))
    app.add_option("--transform", transform,
                   "random-resized-crop (rrc), random-crop (crop: the study's fixed window), "
                   "center-crop (center: evaluation)")
        ->capture_default_str()
        ->check(parsed_by([](const std::string& s) { parse_transform(s); }, "TRANSFORM"));
  if (want(kSize))
    app.add_option_function<std::string>(
           "--size", [this](const std::string& s) { parse_size(s, size, height); },
           "Output size: N (N x N pixels) or HxW (height x width, as torchvision's (h, w))")
        ->default_str(size_text());
  if (want(kSizeSchedule)) {
    CLI::Option* o =
        app.add_option("--size-schedule", size_schedule,
                       "Progressive resizing (square): MIN:MAX@A-B is MIN px until epoch A, a "
                       "linear ramp to MAX px by epoch B (rounded to a multiple of 32, as FFCV), "
                       "MAX px after; MIN:MAX@steps:A-B counts optimiser steps (batches) instead")
            ->check(parsed_by([](const std::string& s) { parse_size_schedule(s); }, "SCHEDULE"));
    if (CLI::Option* size = app.get_option_no_throw("--size")) o->excludes(size);
  }
  if (want(kNormalize)) {
    app.add_option_function<std::string>(
           "--mean", [this](const std::string& s) { mean = parse_triple("--mean", s, false); },
           "Per-channel mean R,G,B on the 0..1 scale, for f32 output ((x/255 - mean)/std) and "
           "the backends' u8 input")
        ->default_str("0.485,0.456,0.406");
    app.add_option_function<std::string>(
           "--std", [this](const std::string& s) { std = parse_triple("--std", s, true); },
           "Per-channel standard deviation R,G,B on the 0..1 scale (positive)")
        ->default_str("0.229,0.224,0.225");
  }
  if (want(kFlip))
    app.add_option("--flip", flip, "Probability of a horizontal flip")
        ->capture_default_str()
        ->check(number_in(0.0, 1.0));
  if (want(kDtype))
    app.add_option("--dtype", dtype, "f32 (normalised with ImageNet mean/std) or u8")
        ->capture_default_str()
        ->check(parsed_by([](const std::string& s) { parse_dtype(s); }, "DTYPE"));
  if (want(kLayout))
    app.add_option("--layout", layout, "nchw or nhwc")
        ->capture_default_str()
        ->check(parsed_by([](const std::string& s) { parse_layout(s); }, "LAYOUT"));
  if (want(kSeed))
    app.add_option("--seed", seed, "Seed for shuffling and augmentation")
        ->capture_default_str()
        ->check(integer_in(0));
  if (want(kNoShuffle)) app.add_flag("--no-shuffle", no_shuffle, "Visit samples in index order");
  if (want(kDropLast))
    app.add_flag("--drop-last", drop_last, "Drop the short last batch of an epoch");
  if (want(kOnError))
    app.add_option("--on-error", on_error,
                   "Bad sample policy: skip (replace by the next sample, count and list) or fail")
        ->capture_default_str()
        ->check(parsed_by([](const std::string& s) { parse_error_policy(s); }, "POLICY"));
  if (want(kMaxPixels))
    app.add_option("--max-pixels", max_pixels, "Refuse images whose header claims more pixels")
        ->capture_default_str()
        ->check(integer_in(1));
  if (want(kNoDctScaling))
    app.add_flag("--no-dct-scaling", no_dct_scaling, "Always decode JPEGs at full resolution");
  if (want(kNoPartialDecode))
    app.add_flag("--no-partial-decode", no_partial_decode,
                 "Decode whole JPEGs even where the crop needs only some rows and columns");
  if (want(kNoDecode))
    app.add_flag("--no-decode", no_decode,
                 "Read only (no decode or augment): the raw storage path through the reader");
  if (want(kDirect))
    app.add_flag("--direct", direct, "O_DIRECT reads, bypassing the page cache (uring readers)");
  if (want(kShardOrder))
    app.add_option("--shard-order", shard_order,
                   "Packed shards: global (exact shuffle, each sample read by offset: the file "
                   "tree's order) or sequential (shards shuffled, streamed through a shuffle "
                   "buffer)")
        ->capture_default_str()
        ->check(parsed_by([](const std::string& s) { parse_shard_order(s); }, "ORDER"));
  if (want(kShuffleBuffer))
    app.add_option("--shuffle-buffer", shuffle_buffer,
                   "Samples in the shuffle buffer of --shard-order sequential")
        ->capture_default_str()
        ->check(integer_in(0));
  if (want(kSource))
    app.add_option("--source", source,
                   "Where bytes come from: auto (from the dataset and reader), pread, uring, null "
                   "(no I/O, one fixed JPEG: the loader's own overhead), nfs, shard")
        ->capture_default_str()
        ->check(parsed_by([](const std::string& s) { parse_source_kind(s); }, "SOURCE"));
  if (want(kNullFile))
    app.add_option("--null-file", null_file,
                   "With --source null: serve this file's bytes instead of the built-in JPEG");
  if (want(kJitter))
    app.add_option("--jitter", jitter,
                   "Colour jitter B,C,S,H as torchvision's ColorJitter(brightness, contrast, "
                   "saturation, hue): factors drawn per sample from [max(0,1-x), 1+x] (hue: "
                   "[-H, H], H <= 0.5), the four ops in a random order; 0 leaves one out")
        ->check(parsed_by(
            [](const std::string& s) {
              ColorConfig c;
              parse_jitter(s, c);
            },
            "B,C,S,H"));
  if (want(kGrayscale))
    app.add_option("--grayscale", grayscale,
                   "Probability of turning a sample grey (RandomGrayscale: 3 equal channels of "
                   "its luma), after any jitter")
        ->capture_default_str()
        ->check(number_in(0.0, 1.0));
  if (want(kResizeFilter))
    app.add_option("--resize-filter", resize_filter,
                   "fast (OpenCV bilinear, area averaging from 3x down, after DCT scaling) or "
                   "antialias (Pillow's bilinear on a full-resolution decode: torchvision's "
                   "default PIL path, pixel for pixel; slower)")
        ->capture_default_str()
        ->check(parsed_by([](const std::string& s) { parse_resize_filter(s); }, "FILTER"));
}

LoaderConfig LoaderOptions::to_config() const {
  LoaderConfig c;
  c.sampler.batch_size = batch;
  c.sampler.shuffle = !no_shuffle;
  c.sampler.drop_last = drop_last;
  c.sampler.seed = seed;
  c.sampler.shard_order = parse_shard_order(shard_order);
  c.sampler.shuffle_buffer = shuffle_buffer;
  c.prefetch = prefetch;
  c.transform.kind = parse_transform(transform);
  c.transform.size = size;
  c.transform.height = height;
  // The usual 0.875 crop ratio (256 for 224), of the larger side for a non-square output.
  c.transform.resize = std::max(out_width(), out_height()) * 256 / 224;
  c.transform.flip = c.transform.kind == TransformKind::center_crop ? 0.0 : flip;
  c.transform.filter = parse_resize_filter(resize_filter);
  // Colour augmentation is training's, as the flip: evaluation's centre crop has none.
  if (c.transform.kind != TransformKind::center_crop) {
    if (!jitter.empty()) parse_jitter(jitter, c.transform.color);
    c.transform.color.grayscale = grayscale;
  }
  if (!size_schedule.empty()) c.size_schedule = parse_size_schedule(size_schedule);
  c.output.dtype = parse_dtype(dtype);
  c.output.layout = parse_layout(layout);
  c.output.width = out_width();
  c.output.height = out_height();
  c.output.mean = mean;
  c.output.std = std;
  c.decode.max_pixels = max_pixels;
  // antialias is for parity with torchvision's PIL path, which filters the full-resolution
  // image: a DCT-scaled decode pre-shrinks differently (mean ~2-4 levels off on fine texture),
  // so that filter decodes at full resolution (rows and columns outside the crop still skipped).
  c.decode.allow_dct_scaling = !no_dct_scaling && c.transform.filter != ResizeFilter::antialias;
  c.decode.allow_partial = !no_partial_decode;
  c.on_error = parse_error_policy(on_error);
  c.no_decode = no_decode;
  c.direct = direct;
  c.source = parse_source_kind(source);
  c.null_file = null_file;
  return c;
}

}  // namespace stoker
