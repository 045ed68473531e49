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
  add_rows(loader_option_table(), app, *this, which);
}

const std::vector<OptionRow<LoaderOptions>>& loader_option_table() {
  using O = LoaderOptions;
  using Row = OptionRow<O>;
  constexpr OnResume kept = OnResume::kept;
  static const std::vector<Row> table = [] {
    std::vector<Row> t;
    t.push_back(option_row("batch", "--batch", &O::batch, "Samples per batch")
                    .checked(integer_in(1, 1u << 20))
                    .on_resume(OnResume::global)
                    .in(kBatch));
    t.push_back(option_row("prefetch", "--prefetch", &O::prefetch,
                           "Batches prepared ahead of the consumer (all readers but serial)")
                    .checked(integer_in(1, 1024))
                    .in(kPrefetch));
    // Stored and compared by its full name: a run started with `rrc` resumes with
    // `random-resized-crop` (the same transform), and contexts name it one way.
    t.push_back(
        option_row("transform", "--transform", &O::transform,
                   "random-resized-crop (rrc), random-crop (crop: the study's fixed "
                   "window), center-crop (center: evaluation)")
            .checked(parsed_by([](const std::string& s) { parse_transform(s); }, "TRANSFORM"))
            .stored_as([](const O& o) -> nlohmann::json {
              return transform_name(parse_transform(o.transform));
            })
            .on_resume(kept)
            .in(kTransform));
    t.push_back(
        field_row("size", "--size", &O::size,
                  "Output size: N (N x N pixels) or HxW (height x width, as torchvision's (h, w))")
            .on_resume(kept)
            .in(kSize)
            .added_by([](CLI::App& app, O& o, const Row& r) {
              return app
                  .add_option_function<std::string>(
                      r.flag, [&o](const std::string& s) { parse_size(s, o.size, o.height); },
                      r.help)
                  ->default_str(o.size_text());
            }));
    // Set by --size HxW (0: square); registered with "size".
    t.push_back(field_row("height", "--size", &O::height, "").on_resume(kept).in(kSize));
    t.push_back(
        field_row("size_schedule", "--size-schedule", &O::size_schedule,
                  "Progressive resizing (square): MIN:MAX@A-B is MIN px until epoch A, a linear "
                  "ramp to MAX px by epoch B (rounded to a multiple of 32, as FFCV), MAX px "
                  "after; MIN:MAX@steps:A-B counts optimiser steps (batches) instead")
            .on_resume(kept)
            .in(kSizeSchedule)
            .added_by([](CLI::App& app, O& o, const Row& r) {
              CLI::Option* opt =
                  app.add_option(r.flag, o.size_schedule, r.help)
                      ->check(parsed_by([](const std::string& s) { parse_size_schedule(s); },
                                        "SCHEDULE"));
              if (CLI::Option* size = app.get_option_no_throw("--size")) opt->excludes(size);
              return opt;
            }));
    // Normalisation: three numbers each, given as "R,G,B".
    const auto triple = [](const char* key, const char* flag, std::array<float, 3> O::*m,
                           const char* help, const char* default_text, bool positive) {
      return field_row(key, flag, m, help)
          .on_resume(kept)
          .in(kNormalize)
          .added_by([m, default_text, positive](CLI::App& app, O& o, const Row& r) {
            const char* flag = r.flag;
            return app
                .add_option_function<std::string>(
                    flag,
                    [&o, m, flag, positive](const std::string& s) {
                      o.*m = parse_triple(flag, s, positive);
                    },
                    r.help)
                ->default_str(default_text);
          });
    };
    t.push_back(triple("mean", "--mean", &O::mean,
                       "Per-channel mean R,G,B on the 0..1 scale, for f32 output ((x/255 - "
                       "mean)/std) and the backends' u8 input",
                       "0.485,0.456,0.406", false));
    t.push_back(triple("std", "--std", &O::std,
                       "Per-channel standard deviation R,G,B on the 0..1 scale (positive)",
                       "0.229,0.224,0.225", true));
    t.push_back(option_row("flip", "--flip", &O::flip, "Probability of a horizontal flip")
                    .checked(number_in(0.0, 1.0))
                    .on_resume(kept)
                    .in(kFlip));
    t.push_back(
        option_row("dtype", "--dtype", &O::dtype, "f32 (normalised with ImageNet mean/std) or u8")
            .checked(parsed_by([](const std::string& s) { parse_dtype(s); }, "DTYPE"))
            .in(kDtype));
    t.push_back(option_row("layout", "--layout", &O::layout, "nchw or nhwc")
                    .checked(parsed_by([](const std::string& s) { parse_layout(s); }, "LAYOUT"))
                    .on_resume(kept)
                    .in(kLayout));
    t.push_back(option_row("seed", "--seed", &O::seed, "Seed for shuffling and augmentation")
                    .checked(integer_in(0))
                    .on_resume(kept)
                    .in(kSeed));
    t.push_back(
        option_row("no_shuffle", "--no-shuffle", &O::no_shuffle, "Visit samples in index order")
            .on_resume(kept)
            .in(kNoShuffle));
    t.push_back(option_row("drop_last", "--drop-last", &O::drop_last,
                           "Drop the short last batch of an epoch")
                    .in(kDropLast));
    t.push_back(
        option_row("on_error", "--on-error", &O::on_error,
                   "Bad sample policy: skip (replace by the next sample, count and list) "
                   "or fail")
            .checked(parsed_by([](const std::string& s) { parse_error_policy(s); }, "POLICY"))
            .in(kOnError));
    t.push_back(option_row("max_pixels", "--max-pixels", &O::max_pixels,
                           "Refuse images whose header claims more pixels")
                    .checked(integer_in(1))
                    .in(kMaxPixels));
    t.push_back(option_row("no_dct_scaling", "--no-dct-scaling", &O::no_dct_scaling,
                           "Always decode JPEGs at full resolution")
                    .in(kNoDctScaling));
    t.push_back(option_row("no_partial_decode", "--no-partial-decode", &O::no_partial_decode,
                           "Decode whole JPEGs even where the crop needs only some rows and "
                           "columns")
                    .in(kNoPartialDecode));
    t.push_back(option_row("no_decode", "--no-decode", &O::no_decode,
                           "Read only (no decode or augment): the raw storage path through the "
                           "reader")
                    .in(kNoDecode));
    t.push_back(option_row("direct", "--direct", &O::direct,
                           "O_DIRECT reads, bypassing the page cache (uring readers)")
                    .in(kDirect));
    t.push_back(option_row("shard_order", "--shard-order", &O::shard_order,
                           "Packed shards: global (exact shuffle, each sample read by offset: "
                           "the file tree's order) or sequential (shards shuffled, streamed "
                           "through a shuffle buffer)")
                    .checked(parsed_by([](const std::string& s) { parse_shard_order(s); }, "ORDER"))
                    .in(kShardOrder));
    t.push_back(option_row("shuffle_buffer", "--shuffle-buffer", &O::shuffle_buffer,
                           "Samples in the shuffle buffer of --shard-order sequential")
                    .checked(integer_in(0))
                    .in(kShuffleBuffer));
    t.push_back(
        option_row("source", "--source", &O::source,
                   "Where bytes come from: auto (from the dataset and reader), pread, "
                   "uring, null (no I/O, one fixed JPEG: the loader's own overhead), "
                   "nfs, shard")
            .checked(parsed_by([](const std::string& s) { parse_source_kind(s); }, "SOURCE"))
            .in(kSource));
    t.push_back(option_row("null_file", "--null-file", &O::null_file,
                           "With --source null: serve this file's bytes instead of the built-in "
                           "JPEG")
                    .no_default()
                    .in(kNullFile));
    t.push_back(option_row("jitter", "--jitter", &O::jitter,
                           "Colour jitter B,C,S,H as torchvision's ColorJitter(brightness, "
                           "contrast, saturation, hue): factors drawn per sample from "
                           "[max(0,1-x), 1+x] (hue: [-H, H], H <= 0.5), the four ops in a random "
                           "order; 0 leaves one out")
                    .checked(parsed_by(
                        [](const std::string& s) {
                          ColorConfig c;
                          parse_jitter(s, c);
                        },
                        "B,C,S,H"))
                    .no_default()
                    .on_resume(kept)
                    .in(kJitter));
    t.push_back(option_row("grayscale", "--grayscale", &O::grayscale,
                           "Probability of turning a sample grey (RandomGrayscale: 3 equal "
                           "channels of its luma), after any jitter")
                    .checked(number_in(0.0, 1.0))
                    .on_resume(kept)
                    .in(kGrayscale));
    t.push_back(
        option_row("resize_filter", "--resize-filter", &O::resize_filter,
                   "fast (OpenCV bilinear, area averaging from 3x down, after DCT "
                   "scaling) or antialias (Pillow's bilinear on a full-resolution "
                   "decode: torchvision's default PIL path, pixel for pixel; slower)")
            .checked(parsed_by([](const std::string& s) { parse_resize_filter(s); }, "FILTER"))
            .on_resume(kept)
            .in(kResizeFilter));
    return t;
  }();
  return table;
}

nlohmann::json loader_options_json(const LoaderOptions& o) {
  return rows_json(loader_option_table(), o, false);
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
  c.source.kind = parse_source_kind(source);
  c.source.direct = direct;
  c.source.null_file = null_file;
  return c;
}

}  // namespace stoker
