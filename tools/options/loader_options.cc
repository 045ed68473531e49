// SPDX-License-Identifier: Apache-2.0
#include "tools/options/loader_options.h"

#include <fmt/format.h>

#include "augment/crop.h"
#include "common/system_info.h"
#include "tools/options/option_checks.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace stoker {

namespace {

// The idle rules several rows share: each row that means nothing under evaluation's centre
// crop, or without a decode, says so itself (tools/options/idle_rules.h).
IdleWith under_centre_crop() {
  return {"--transform", "center", "evaluation's centre crop: no flip, no colour augmentation",
          [](const std::string& v) {
            return !v.empty() && parse_transform(v) == TransformKind::center_crop;
          }};
}
IdleWith without_decode() {
  return {.trigger = "--no-decode",
          .example = "",
          .why = "files are read, not decoded",
          .when = nullptr,
          .flag = true};
}

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

namespace {

bool parse_int(const std::string& s, int& v) {
  size_t used = 0;
  try {
    v = std::stoi(s, &used);
  } catch (const std::exception&) {
    return false;
  }
  return !s.empty() && used == s.size() && v > 0;
}

// "N" or "A..B" (B - A at most 1024).
bool parse_counts(const std::string& s, std::vector<int>& out) {
  const size_t dots = s.find("..");
  int a = 0, b = 0;
  if (dots == std::string::npos) {
    if (!parse_int(s, a)) return false;
    out = {a};
    return true;
  }
  if (!parse_int(s.substr(0, dots), a) || !parse_int(s.substr(dots + 2), b) || b < a ||
      b - a > 1024)
    return false;
  out.clear();
  for (int n = a; n <= b; ++n) out.push_back(n);
  return true;
}

// Every reader of the list is uring, or auto (whose uring candidates read with --direct).
bool has_auto(const std::string& readers) {
  for (const std::optional<ReaderSpec>& r : parse_reader_choices(readers))
    if (!r) return true;
  return false;
}

bool all_uring(const std::string& readers) {
  for (const std::optional<ReaderSpec>& r : parse_reader_choices(readers))
    if (r && r->kind != ReaderSpec::Kind::uring) return false;
  return true;
}

}  // namespace

bool is_auto_reader(const std::string& text) {
  return text == "auto";
}

std::vector<std::optional<ReaderSpec>> parse_reader_choices(const std::string& text) {
  std::vector<std::optional<ReaderSpec>> out;
  std::string run;  // fixed readers since the last auto
  auto flush = [&] {
    if (run.empty()) return;
    for (const ReaderSpec& r : parse_reader_list(run)) out.emplace_back(r);
    run.clear();
  };
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string token = text.substr(begin, comma - begin);
    begin = comma + 1;
    if (is_auto_reader(token)) {
      flush();
      out.emplace_back(std::nullopt);
    } else {
      run += run.empty() ? token : "," + token;
    }
  }
  flush();
  return out;
}

std::vector<ReaderSpec> parse_reader_list(const std::string& text) {
  std::vector<ReaderSpec> out;
  std::string kind;  // of the last token, for bare counts after it
  std::string uring_threads;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string token = text.substr(begin, comma - begin);
    begin = comma + 1;
    if (is_auto_reader(token))
      usage_fail(
          "--reader {}: auto chooses the reader while a run goes on; `stoker train` takes it, "
          "and `stoker bench` and `stoker study` as one more reader of their lists; this "
          "command runs fixed readers (serial, threads:N, processes:N, uring:QD[:T])",
          text);
    const size_t colon = token.find(':');
    std::string k = kind, arg = token;
    if (colon != std::string::npos) {
      k = token.substr(0, colon);
      arg = token.substr(colon + 1);
      uring_threads.clear();
      if (k == "uring") {
        const size_t c2 = arg.find(':');
        if (c2 != std::string::npos) {
          uring_threads = arg.substr(c2);
          arg = arg.substr(0, c2);
        }
      }
    }
    std::vector<int> counts;
    if (token == "serial" || k.empty() || (k != "threads" && k != "processes" && k != "uring") ||
        !parse_counts(arg, counts)) {
      if (token.empty() || (colon == std::string::npos && token != "serial" && !kind.empty()))
        fail(
            "'{}' is not a reader: expected serial, threads:N, processes:N, uring:QD[:T], a "
            "count after one of them, or A..B",
            token);
      out.push_back(parse_reader(token));  // serial, or its message for what is not a reader
      kind = token == "serial" ? "" : k;
      continue;
    }
    for (int n : counts) out.push_back(parse_reader(fmt::format("{}:{}{}", k, n, uring_threads)));
    kind = k;
  }
  return out;
}

std::string default_reader() {
  return fmt::format("threads:{}", online_cpus());
}

TunerLimits LoaderOptions::tuner_limits() const {
  TunerLimits l;
  l.window = auto_window;
  l.min_window = std::max<size_t>(2, auto_window / 4);
  l.settle = std::max<size_t>(1, auto_window / 8);
  l.plan = parse_search_plan(auto_search);
  return l;
}

ReaderSpec LoaderOptions::one_reader(const char* who) const {
  const std::string text = reader.empty() ? default_reader() : reader;
  if (const auto choices = parse_reader_choices(text); choices.size() > 1)
    usage_fail("{}: --reader {} names {} readers; {} runs one", who, reader, choices.size(), who);
  const std::vector<ReaderSpec> r = parse_reader_list(text);
  if (r.size() != 1)
    usage_fail("{}: --reader {} names {} readers; {} runs one", who, reader, r.size(), who);
  return r[0];
}

void LoaderOptions::add_to(CLI::App& app, const std::vector<std::string>& except) {
  for (const std::string& f : except) STOKER_CHECK_MSG(loader_option(f) != nullptr, "{}", f);
  add_rows<LoaderOptions>(loader_option_table(), app, *this, [&](const auto& r) {
    return std::find(except.begin(), except.end(), r.flag) == except.end();
  });
}

void LoaderOptions::add_only(CLI::App& app, const std::vector<std::string>& only) {
  for (const std::string& f : only) STOKER_CHECK_MSG(loader_option(f) != nullptr, "{}", f);
  add_rows<LoaderOptions>(loader_option_table(), app, *this, [&](const auto& r) {
    return std::find(only.begin(), only.end(), r.flag) != only.end();
  });
}

const OptionRow<LoaderOptions>* loader_option(const std::string& flag) {
  for (const auto& r : loader_option_table()) {
    if (r.flag != nullptr && flag == r.flag) return &r;
    for (const char* a : r.aliases)
      if (flag == a) return &r;
  }
  return nullptr;
}

const std::vector<OptionRow<LoaderOptions>>& loader_option_table() {
  using O = LoaderOptions;
  using Row = OptionRow<O>;
  constexpr OnResume kept = OnResume::kept;
  static const std::vector<Row> table = [] {
    std::vector<Row> t;
    t.push_back(option_row("batch", "--batch", &O::batch, "Samples per batch")
                    .integer_range(1, 1u << 20)
                    .python("batch_size")
                    .feeds_synthetic()
                    .on_resume(OnResume::global));
    t.push_back(option_row("prefetch", "--prefetch", &O::prefetch,
                           "Batches prepared ahead of the consumer (all readers but serial)")
                    .integer_range(1, 1024)
                    .python("prefetch"));
    // One row for every command; bench, probe and study compare the readers of a list, the
    // others run one (LoaderOptions::one_reader). `study --readers` is the older name.
    t.push_back(
        option_row("reader", "--reader", &O::reader,
                   "Reader policy: serial, threads:N, processes:N, uring:QD[:T] (docs/CLI.md, "
                   "Readers), or auto (train, bench, study: chosen while the run goes on, by the "
                   "consumer's steps/s); bench, probe and study take a comma-separated list, "
                   "where a bare count repeats the kind before it and A..B is every count "
                   "between")
            .checked(parsed_by([](const std::string& s) { parse_reader_choices(s); }, "READER"))
            .also("--readers")
            .python("reader")
            .sample("serial"));
    t.push_back(option_row("auto_window", "--auto-window", &O::auto_window,
                           "With --reader auto (train, bench, study): the most consumer steps "
                           "measured per candidate; a window ends sooner, after at least a quarter "
                           "as many, once its candidate is clearly behind, level, or measured "
                           "precisely (an eighth as many more are left out after each switch)")
                    .integer_range(2, 1u << 20)
                    .python("auto_window")
                    .idle_with("--reader", "threads:2", "the search is --reader auto's",
                               [](const std::string& v) { return !v.empty() && !has_auto(v); }));
    t.push_back(option_row("auto_search", "--auto-search", &O::auto_search,
                           "With --reader auto (train, bench, study): how a search walks the "
                           "candidates")
                    .accepts(
                        {{"staged",
                          "the default reader first, then fewer cores while the consumer does not "
                          "wait for data, other kinds and deeper prefetch while it does"},
                         {"full", "every candidate in turn, then the best's prefetch depths"}},
                        [](const std::string& s) { parse_search_plan(s); }, "PLAN")
                    .python("auto_search")
                    .idle_with("--reader", "threads:2", "the search is --reader auto's",
                               [](const std::string& v) { return !v.empty() && !has_auto(v); }));
    // Stored and compared by its full name: a run started with `rrc` resumes with
    // `random-resized-crop` (the same transform), and contexts name it one way.
    t.push_back(option_row("transform", "--transform", &O::transform, "Crop and resize")
                    .accepts(
                        {{"random-resized-crop", "rrc: torchvision's RandomResizedCrop"},
                         {"random-crop", "crop: the study's fixed window"},
                         {"center-crop", "center: evaluation's resize and centre crop"}},
                        [](const std::string& s) { parse_transform(s); }, "TRANSFORM")
                    .stored_as([](const O& o) -> nlohmann::json {
                      return transform_name(parse_transform(o.transform));
                    })
                    .python("transform")
                    .idle_with(without_decode())
                    .on_resume(kept));
    t.push_back(
        field_row("size", "--size", &O::size,
                  "Output size: N (N x N pixels) or HxW (height x width, as torchvision's (h, w))")
            .on_resume(kept)
            .shaped(ValueShape::size)
            .python("size")
            .feeds_synthetic()
            .sample("48x64")
            .idle_with(without_decode())
            .idle_with("--size-schedule", "32:64@0-2", "a schedule sets every size",
                       [](const std::string& v) { return !v.empty(); })
            .added_by([](CLI::App& app, O& o, const Row& r) {
              return app
                  .add_option_function<std::string>(
                      r.flag, [&o](const std::string& s) { parse_size(s, o.size, o.height); },
                      r.help)
                  ->default_str(o.size_text());
            }));
    t.back().from_text = [](O& o, const std::string& s) { parse_size(s, o.size, o.height); };
    // Set by --size HxW (0: square); registered with "size".
    t.push_back(field_row("height", "--size", &O::height, "").on_resume(kept));
    t.push_back(
        option_row("size_schedule", "--size-schedule", &O::size_schedule,
                   "Progressive resizing (square): MIN:MAX@A-B is MIN px until epoch A, a linear "
                   "ramp to MAX px by epoch B (rounded to a multiple of 32, as FFCV), MAX px "
                   "after; MIN:MAX@steps:A-B counts optimiser steps (batches) instead")
            .checked(parsed_by([](const std::string& s) { parse_size_schedule(s); }, "SCHEDULE"))
            .no_default()
            .python("size_schedule")
            .sample("32:64@0-2")
            .on_resume(kept));
    // Normalisation: three numbers each, given as "R,G,B".
    const auto triple = [](const char* key, const char* flag, std::array<float, 3> O::*m,
                           const char* help, bool positive) {
      Row r = field_row(key, flag, m, help)
                  .on_resume(kept)
                  .shaped(ValueShape::triple)
                  .python(key)
                  .feeds_synthetic()
                  .sample("0.5,0.5,0.5")
                  .added_by([m, positive](CLI::App& app, O& o, const Row& row) {
                    const char* f = row.flag;
                    return app
                        .add_option_function<std::string>(
                            f,
                            [&o, m, f, positive](const std::string& s) {
                              o.*m = parse_triple(f, s, positive);
                            },
                            row.help)
                        ->default_str(fmt::format("{},{},{}", (o.*m)[0], (o.*m)[1], (o.*m)[2]));
                  });
      r.from_text = [m, flag, positive](O& o, const std::string& s) {
        o.*m = parse_triple(flag, s, positive);
      };
      return r;
    };
    t.push_back(triple("mean", "--mean", &O::mean,
                       "Per-channel mean R,G,B on the 0..1 scale, for f32 output ((x/255 - "
                       "mean)/std) and the backends' u8 input",
                       false)
                    .idle_with(without_decode()));
    t.push_back(triple("std", "--std", &O::std,
                       "Per-channel standard deviation R,G,B on the 0..1 scale (positive)", true)
                    .idle_with(without_decode()));
    t.push_back(option_row("flip", "--flip", &O::flip, "Probability of a horizontal flip")
                    .number_range(0.0, 1.0)
                    .python("flip")
                    .idle_with(under_centre_crop())
                    .idle_with(without_decode())
                    .on_resume(kept));
    t.push_back(option_row("dtype", "--dtype", &O::dtype, "Output type")
                    .accepts(
                        {{"f32", "normalised with --mean and --std"}, {"u8", "raw pixels"}},
                        [](const std::string& s) { parse_dtype(s); }, "DTYPE")
                    .python("dtype")
                    .idle_with(without_decode())
                    .feeds_synthetic());
    t.push_back(option_row("layout", "--layout", &O::layout, "Output layout")
                    .accepts(
                        {{"nchw", "channels first"}, {"nhwc", "channels last"}},
                        [](const std::string& s) { parse_layout(s); }, "LAYOUT")
                    .python("layout")
                    .idle_with(without_decode())
                    .feeds_synthetic()
                    .on_resume(kept));
    t.push_back(option_row("seed", "--seed", &O::seed, "Seed for shuffling and augmentation")
                    .integer_range(0)
                    .python("seed")
                    .feeds_synthetic()
                    .on_resume(kept));
    t.push_back(
        option_row("no_shuffle", "--no-shuffle", &O::no_shuffle, "Visit samples in index order")
            .python("shuffle", true)
            .on_resume(kept));
    t.push_back(option_row("drop_last", "--drop-last", &O::drop_last,
                           "Drop the short last batch of an epoch")
                    .python("drop_last"));
    t.push_back(option_row("on_error", "--on-error", &O::on_error, "Bad sample policy")
                    .accepts(
                        {{"skip", "replace by the next sample, count and list"},
                         {"fail", "stop with an error naming the file"}},
                        [](const std::string& s) { parse_error_policy(s); }, "POLICY")
                    .python("on_error"));
    t.push_back(option_row("max_pixels", "--max-pixels", &O::max_pixels,
                           "Refuse images whose header claims more pixels")
                    .integer_range(1)
                    .python("max_pixels"));
    t.push_back(option_row("no_dct_scaling", "--no-dct-scaling", &O::no_dct_scaling,
                           "Always decode JPEGs at full resolution")
                    .python("dct_scaling", true)
                    .idle_with(without_decode()));
    t.push_back(option_row("no_partial_decode", "--no-partial-decode", &O::no_partial_decode,
                           "Decode whole JPEGs even where the crop needs only some rows and "
                           "columns")
                    .python("partial_decode", true)
                    .idle_with(without_decode()));
    t.push_back(option_row("no_decode", "--no-decode", &O::no_decode,
                           "Read only (no decode or augment): the raw storage path through the "
                           "reader")
                    .python("decode", true));
    t.push_back(option_row("direct", "--direct", &O::direct,
                           "O_DIRECT reads, bypassing the page cache (uring readers)")
                    .python("direct")
                    .idle_with("--reader", "threads:2",
                               "O_DIRECT wants aligned buffers: uring readers only",
                               [](const std::string& v) { return !v.empty() && !all_uring(v); }));
    t.push_back(
        option_row("shard_order", "--shard-order", &O::shard_order, "Packed shards' order")
            .accepts(
                {{"global", "exact shuffle, each sample read by offset: the file tree's order"},
                 {"sequential", "shards shuffled, streamed through a shuffle buffer"}},
                [](const std::string& s) { parse_shard_order(s); }, "ORDER")
            .python("shard_order"));
    t.push_back(option_row("shuffle_buffer", "--shuffle-buffer", &O::shuffle_buffer,
                           "Samples in the shuffle buffer of --shard-order sequential")
                    .integer_range(0)
                    .python("shuffle_buffer")
                    .idle_with("--shard-order", "global", "only a sequential order has one",
                               [](const std::string& v) {
                                 return parse_shard_order(v) !=
                                        SamplerConfig::ShardOrder::sequential;
                               }));
    t.push_back(
        option_row("source", "--source", &O::source, "Where bytes come from")
            .accepts(
                {{"auto", "from the dataset and reader"},
                 {"pread", "local files, one read each"},
                 {"uring", "local files through io_uring"},
                 {"null", "no I/O, one fixed JPEG: the loader's own overhead"},
                 {"nfs", "libnfs"},
                 {"shards",
                  "a sample's byte range in a packed shard; shard: the older name, deprecated"}},
                [](const std::string& s) { parse_source_kind(s); }, "SOURCE")
            .python("source_kind"));
    t.push_back(option_row("null_file", "--null-file", &O::null_file,
                           "With --source null: serve this file's bytes instead of the built-in "
                           "JPEG")
                    .no_default()
                    .python("null_file")
                    .sample("photo.jpg")
                    .idle_with("--source", "pread", "only the null source serves one file",
                               [](const std::string& v) {
                                 return parse_source_kind(v) != SourceOptions::Kind::null;
                               }));
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
                    .python("jitter")
                    .sample("0.4,0.4,0.4,0.1")
                    .idle_with(under_centre_crop())
                    .idle_with(without_decode())
                    .on_resume(kept));
    t.push_back(option_row("grayscale", "--grayscale", &O::grayscale,
                           "Probability of turning a sample grey (RandomGrayscale: 3 equal "
                           "channels of its luma), after any jitter")
                    .number_range(0.0, 1.0)
                    .python("grayscale")
                    .idle_with(under_centre_crop())
                    .idle_with(without_decode())
                    .on_resume(kept));
    t.push_back(
        option_row("resize_filter", "--resize-filter", &O::resize_filter, "Resize filter")
            .accepts(
                {{"fast", "OpenCV bilinear, area averaging from 3x down, after DCT scaling"},
                 {"antialias",
                  "Pillow's bilinear on a full-resolution decode: torchvision's default "
                  "PIL path, pixel for pixel; slower"}},
                [](const std::string& s) { parse_resize_filter(s); }, "FILTER")
            .python("resize_filter")
            .idle_with(without_decode())
            .on_resume(kept));
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
