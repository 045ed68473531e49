// SPDX-License-Identifier: Apache-2.0
// stoker bench: loader-only throughput. `#` lines give the context (versions, machine,
// dataset, options), then one fixed-width row per (dataset, reader); --json writes one
// {context, results[]} document. With no dataset, the built-in default is generated.
#include <tbb/version.h>
#include <opencv2/core/version.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>

#include "common/clock.h"
#include "common/error.h"
#include "common/interrupt.h"
#include "common/measures.h"
#include "common/progress.h"
#include "common/system_info.h"
#include "common/trace_writer.h"
#include "loader/index/index.h"
#include "loader/iterator.h"
#include "loader/loader_stats.h"
#include "loader/sample_trace.h"
#include "loader/sources/nfs_url.h"
#include "loader/sources/source.h"
#include "loader/tuning/tuning_candidates.h"
#include "tools/bench/bench_common.h"
#include "tools/bench/emulated_consumer.h"
#include "tools/cache_dir.h"
#include "tools/commands.h"
#include "tools/gen/gen_dataset.h"
#include "tools/options/command_options.h"
#include "tools/options/loader_options.h"
#include "tools/options/option_checks.h"
#include "tools/output_check.h"
#include "tools/pack/packed_dataset.h"
#include "tools/per_size.h"
#include "tools/setup/class_names.h"
#include "tools/tuning_report.h"
#include "train/activity.h"
#include "train/emulated_accelerator.h"

namespace stoker {

namespace {

struct BenchOptions {
  std::vector<std::string> data;
  int epochs = 1;
  size_t max_batches = 0;
  int64_t warmup = 3;  // --warmup: batches before the steady state's clock starts
  double seconds = 0;  // 0: no time bound
  bool cold = false;
  bool server_cold = false;  // --server-cold: --cold reaches an nfs:// dataset's local server
  std::string json;
  std::string default_root = stoker_cache_dir() + "/default";
  std::string emulate;
  double au_target = 0.9;
  EmulatedAccelerator accelerator;  // from `emulate`
  std::string trace, trace_batches;
  TraceWindow trace_window;    // from `trace_batches`
  std::string decode = "cpu";  // gpu: the loader's half of train --decode gpu alone
  LoaderOptions loader;
};

// What a trace keeps of one run: the consumer's wait and compute per batch and the loader's
// per-sample timings, for the batches inside the window.
struct RunTrace {
  std::vector<int64_t> numbers;  // batch numbers in the run, from 0
  std::vector<Interval> waits, computes;
  std::vector<std::vector<SampleTiming>> samples;
};

// Run r of the bench is processes 2r+1 (the consumer, one track) and 2r+2 (its loader's
// threads, one track each), so that runs of several readers line up in one file.
void add_run_trace(TraceWriter& w, size_t run, const std::string& name, const RunTrace& t) {
  const int consumer = int(2 * run + 1), loader = int(2 * run + 2);
  w.process(consumer, fmt::format("bench {}", name));
  w.track(consumer, 1, "consumer", 0);
  for (size_t k = 0; k < t.numbers.size(); ++k) {
    const int64_t n = t.numbers[k];
    w.event(consumer, 1, fmt::format("wait {}", n), t.waits[k].begin_ns, t.waits[k].end_ns,
            "consumer");
    if (t.computes[k].end_ns > t.computes[k].begin_ns)
      w.event(consumer, 1, fmt::format("compute {}", n), t.computes[k].begin_ns,
              t.computes[k].end_ns, "consumer");
  }
  add_sample_tracks(w, loader, fmt::format("{} loader", name), t.samples, t.numbers);
}

// The steady state, timed as bench/peers.sh times its peers: from the arrival of batch
// `warmup` (--warmup: start-up, the pool's first fill and cold caches before it; 0: from the
// run's start) to the last.
struct SteadyRate {
  size_t warmup = 0;
  int64_t t0 = 0;
  uint64_t images = 0;
  size_t batches = 0;
  void add(size_t done, int64_t arrived, size_t batch_images) {
    if (done + 1 == warmup) t0 = arrived;
    if (done + 1 > warmup) {
      images += batch_images;
      ++batches;
    }
  }
  // Too short a window is measured but not called a rate (not_enough_data).
  nlohmann::json json(int64_t last_arrival, size_t prefetch) const {
    const double secs = 1e-9 * double(last_arrival - t0);
    nlohmann::json j = {{"warmup", warmup},
                        {"batches", batches},
                        {"images", images},
                        {"seconds", secs},
                        {"images_per_s", images_per_s(double(images), secs)}};
    if (const std::string why = not_enough_data(batches, secs, prefetch); !why.empty())
      j["not_enough_data"] = why;
    return j;
  }
};

// `automatic`: --reader auto, from config.reader (the first candidate) on.
LoaderStats run_one(const Index& index, const LoaderConfig& config, const BenchOptions& o,
                    bool automatic, nlohmann::json& result, RunTrace* trace) {
  LoaderStats stats;
  // The clock starts before the iterator exists: start-up (spawning worker processes) is
  // part of what a user waits for. Workers' CPU time is counted once they are reaped, when
  // the iterator is destroyed below.
  const double cpu0 = process_cpu_seconds();
  const int64_t t0 = now_ns();
  auto iterator = std::make_unique<Iterator>(index, config);
  Iterator& it = *iterator;
  std::unique_ptr<ReaderTuner> tuner;
  if (automatic) {
    tuner = std::make_unique<ReaderTuner>(it, reader_candidates(online_cpus(), config.prefetch),
                                          o.loader.tuner_limits());
    tuner->on_search = [n = size_t{0}](const TuningSearch& s) mutable {
      fmt::print("{}", tuning_lines(s, ++n));
      std::fflush(stdout);
    };
  }
  const std::string label = automatic ? "auto" : config.reader.text();
  const size_t per_epoch = it.batches_per_epoch();
  size_t total = per_epoch * static_cast<size_t>(o.epochs);
  if (o.max_batches) total = std::min(total, o.max_batches);
  uint64_t total_images = 0;
  for (size_t b = 0; b < total; ++b) total_images += it.sampler().batch_length(b % per_epoch);
  Progress progress(fmt::format("bench {}", label), total_images, "images");
  // Per output size (a --size-schedule changes it): each batch's time from the consumer's
  // asking for it to its release (its wait, and the emulated compute), as a study cell's.
  std::vector<SizeCost> sizes;
  int64_t last_arrival = t0;
  SteadyRate steady{size_t(o.warmup), t0};
  // Ctrl-C ends the run at a batch boundary: what was measured until then is a valid row.
  // --seconds ends it at the first batch boundary past the deadline (after one batch at
  // least), as Ctrl-C does. AU's window opens when the first batch arrives (no warm-up in
  // the account): start-up is not counted.
  ConsumerRun run;
  run.batches = total;
  run.deadline_ns = o.seconds > 0 ? t0 + int64_t(o.seconds * 1e9) : INT64_MAX;
  run.tuner = tuner.get();
  // A failure mid-run (the NFS server gone, a bad sample under --on-error fail) ends the
  // run, but what was measured until then is kept as a row marked incomplete (issue 47);
  // run_bench fails with the reason once the rows and the JSON are written.
  std::string failure;
  ConsumerResult consumed;
  try {
    consumed = consume(
        it, o.accelerator, run,
        [&](const ConsumedBatch& c) {
          const Batch& b = *c.batch;
          stats.add_batch(b, c.arrived_ns - c.asked_ns);
          SizeCost& z = size_cost(sizes, b.spec.height, b.spec.width);
          ++z.steps;
          // Compute: the emulated accelerator's nominal time (common/measures.h: its
          // oversleep is not compute; it stays in the step, in the gap).
          z.add_timed(1e-9 * double(c.released_ns - c.asked_ns),
                      1e-9 * double(c.arrived_ns - c.asked_ns), 0,
                      1e-9 * double(o.accelerator.compute_ns(b.size)), int64_t(b.size));
          last_arrival = c.arrived_ns;
          steady.add(c.number, c.arrived_ns, b.size);
          if (trace != nullptr && o.trace_window.contains(int64_t(c.number))) {
            trace->numbers.push_back(int64_t(c.number));
            trace->waits.push_back({c.asked_ns, c.arrived_ns});
            trace->computes.push_back({c.arrived_ns, c.released_ns});
            trace->samples.emplace_back(b.timing.begin(), b.timing.begin() + ptrdiff_t(b.size));
          }
          uint64_t bytes = 0;
          for (size_t i = 0; i < b.size; ++i) bytes += b.timing[i].bytes;
          progress.add(b.size, bytes);
        },
        // A checksum covers a whole epoch; a run cut short by --max-batches has none for it.
        [&](uint64_t, uint64_t checksum) { stats.epoch_checksums.push_back(hex64(checksum)); });
  } catch (const Error& e) {
    failure = e.what();
  }
  const int64_t t_end = now_ns();
  stats.wall_ns = t_end - t0;
  progress.finish();
  result = stats.to_json(it);
  if (tuner) {
    const std::vector<TuningSearch> searches = tuner->report();
    if (!searches.empty() && !searches.back().finished)
      fmt::print("{}", tuning_lines(searches.back(), searches.size()));
    result["reader"] = "auto";
    result["reader_tuning"] = tuning_json(searches);
  }
  result["per_size"] = per_size_json(sizes);
  if (steady.images > 0) result["steady"] = steady.json(last_arrival, config.prefetch);
  if (consumed.interrupted) result["interrupted"] = true;
  if (!failure.empty()) result["incomplete"] = failure;
  if (consumed.out_of_time) result["stopped_after_seconds"] = o.seconds;
  tuner.reset();
  iterator.reset();  // reaps worker processes, so their CPU time is counted
  stats.cpu_seconds = process_cpu_seconds() - cpu0;
  result["cpu_seconds"] = stats.cpu_seconds;
  result["cpu_cores_used"] = stats.cpu_seconds / (stats.wall_ns * 1e-9);
  if (o.accelerator.enabled() && failure.empty()) {  // a failed run's account is lost with it
    const Utilisation& use = consumed.use;
    nlohmann::json& e = result["emulation"];
    e = {{"spec", o.accelerator.spec},
         {"images_per_s", o.accelerator.images_per_s()},
         {"batches", consumed.batches},
         {"compute_s", use.compute_ns * 1e-9},
         {"data_wait_s", use.wait_ns * 1e-9},
         {"window_s", use.window_ns * 1e-9},
         {"held_s", use.held_ns * 1e-9},
         {"accelerator_utilisation", use.accelerator_utilisation()},
         {"idle_share", use.idle_share()},
         {"au_target", o.au_target}};
    // No verdict from too little data: AU is measured, but neither met nor not met.
    const std::string why =
        not_enough_data(consumed.batches, use.window_ns * 1e-9, config.prefetch);
    const bool met = use.accelerator_utilisation() >= o.au_target;
    e["verdict"] = !why.empty() ? "not enough data" : met ? "met" : "not met";
    e["meets_target"] = why.empty() ? nlohmann::json(met) : nlohmann::json(nullptr);
    if (!why.empty()) e["not_enough_data"] = why;
  }
  return stats;
}

// A row's storage: "local" or "nfs", so that a local path and an nfs:// URL to the same
// folder (both "512px") are told apart on the row itself (issue 47).
std::string storage_of(const std::string& root) {
  return is_nfs_url(root) ? "nfs" : "local";
}

void print_row(const std::string& dataset, const std::string& storage, const std::string& reader,
               const LoaderStats& s, const nlohmann::json& r) {
  const double n = s.images ? static_cast<double>(s.images) : 1.0;
  const auto& w = s.batch_wait;
  const std::string checksum =
      s.epoch_checksums.empty() ? "-" : s.epoch_checksums.front().substr(0, 12);
  fmt::print(
      "{:<12} {:<7} {:<11} {:>9.1f} {:>8.1f} {:>7.3f} {:>7.3f} {:>7.3f} {:>7.3f} {:>8.1f} "
      "{:>8.1f} {:>8.1f} {:>6.2f} {:>6} {}\n",
      dataset, storage, reader, s.images_per_s(), s.mb_per_s(), s.read_ns / 1e6 / n,
      s.decode_ns / 1e6 / n, s.augment_ns / 1e6 / n, s.collate_ns / 1e6 / n,
      w.quantile_ns(0.5) / 1e6, w.quantile_ns(0.9) / 1e6, w.quantile_ns(0.99) / 1e6,
      r["cpu_cores_used"].get<double>(), r["errors"]["files"].get<size_t>(), checksum);
  if (r.contains("per_size") && r["per_size"].size() > 1) {
    std::string line;
    for (const auto& z : r["per_size"])
      line += fmt::format("  {}x{}: {} batches, {:.1f} img/s;", z["height"].get<int>(),
                          z["width"].get<int>(), z["steps"].get<size_t>(),
                          z["images_per_s"].get<double>());
    fmt::print("{:<12} {:<7} {:<11} per size (from asking for a batch to its release):{}\n", "", "",
               "", line);
  }
  if (r.contains("emulation")) {
    const auto& e = r["emulation"];
    const std::string verdict = e["verdict"].get<std::string>();
    fmt::print(
        "{:<12} {:<7} {:<11} emulated accelerator {:.0f} img/s: AU {:.1f}% (target {:.0f}%: {}), "
        "data wait {:.2f} s of {:.2f} s\n",
        "", "", "", e["images_per_s"].get<double>(),
        100 * e["accelerator_utilisation"].get<double>(), 100 * e["au_target"].get<double>(),
        verdict == "met"       ? "met"
        : verdict == "not met" ? "NOT met"
                               : e["not_enough_data"].get<std::string>(),
        e["data_wait_s"].get<double>(), e["window_s"].get<double>());
  }
  std::fflush(stdout);
}

// Every output and input is checked before the first measurement: the readers to run, and
// the loader's configuration they share.
std::vector<std::optional<ReaderSpec>> check_bench(BenchOptions& o, LoaderConfig& base) {
  check_writable("--json", o.json);
  check_writable("--trace", o.trace);
  for (const std::string& root : o.data) check_dataset_path(root);
  base = o.loader.to_config();
  if (parse_decode_mode(o.decode) == DecodeMode::gpu) base.decode_device = DecodeDevice::gpu;
  if (!o.emulate.empty()) o.accelerator = parse_emulation(o.emulate);
  o.trace_window = {0, 20};
  if (!o.trace_batches.empty())
    o.trace_window = parse_trace_window(o.trace_batches, "--trace-batches", "batches of a run");
  // --direct with a reader other than uring is an idle option (tools/options/idle_rules.h).
  // nullopt: --reader auto (loader/tuning/), one more row.
  const std::vector<std::optional<ReaderSpec>> readers = parse_reader_choices(o.loader.reader);
  // Cold: every file is evicted before each run and again right after it is read, so
  // later epochs read storage too.
  base.source.evict_after_read = o.cold;
  if (o.server_cold && !o.cold)
    usage_fail("--server-cold evicts the NFS server's cache for --cold runs: add --cold");
  return readers;
}

// No dataset given: the built-in default, generated once and then reused.
void use_default_dataset(BenchOptions& o) {
  if (o.data.empty()) o.data = builtin_datasets(o.default_root);
}

void check_shard_order(const BenchOptions& o, const LoaderConfig& base) {
  if (base.sampler.shard_order == SamplerConfig::ShardOrder::sequential)
    for (const std::string& root : o.data)
      if (!is_packed_dataset(root))
        usage_fail(
            "--shard-order sequential needs a packed shard dataset (`stoker pack` makes one); "
            "{} is not one",
            root);
}

nlohmann::json bench_context(const BenchOptions& o) {
  // The machine, the loader options as given (every one, by its JSON key), and bench's own.
  nlohmann::json context = machine_context();
  context.update(loader_options_json(o.loader));
  context.update({{"tool", "stoker bench"},
                  {"version", STOKER_VERSION},
                  {"date", utc_now()},
                  {"libraries", library_versions()},
                  {"epochs", o.epochs},
                  {"max_batches", o.max_batches},
                  {"seconds", o.seconds},
                  {"page_cache", o.cold ? "cold" : "warm"},
                  {"server_cold", o.server_cold},
                  {"emulate", o.emulate}});
  return context;
}

void print_bench_context(const BenchOptions& o, const LoaderConfig& base,
                         const nlohmann::json& context) {
  fmt::print("# stoker {} bench, {}\n", STOKER_VERSION, context["date"].get<std::string>());
  fmt::print("# cpu: {}, {} online cpus, kernel {}\n", cpu_model(), online_cpus(),
             kernel_release());
  fmt::print("# libraries: libjpeg-turbo {}, OpenCV {}, oneTBB {}.{}\n",
             STOKER_LIBJPEG_TURBO_VERSION, CV_VERSION, TBB_VERSION_MAJOR, TBB_VERSION_MINOR);
  fmt::print(
      "# loader: {} {} flip {}, output {} {}, batch {}, prefetch {}, seed {}, shuffle {}, "
      "on-error {}, epochs {}{}{}\n",
      transform_name(base.transform.kind),
      base.size_schedule.active() ? fmt::format("size schedule {}", base.size_schedule.text())
      : base.transform.height > 0
          ? fmt::format("{}x{}", base.transform.out_height(), base.transform.out_width())
          : std::to_string(base.transform.size),
      base.transform.flip, dtype_name(base.output.dtype), layout_name(base.output.layout),
      base.sampler.batch_size, base.prefetch, base.sampler.seed,
      base.sampler.shuffle ? "on" : "off", error_policy_name(base.on_error), o.epochs,
      o.max_batches ? fmt::format(", at most {} batches", o.max_batches) : "",
      o.seconds > 0 ? fmt::format(", at most {} s", o.seconds) : "");
  if (parse_decode_mode(o.decode) == DecodeMode::gpu)
    fmt::print(
        "# decode: the CPU's half of --decode gpu (read, header, crop, bytes for nvJPEG; the "
        "CPU decodes only what nvJPEG cannot take, antialiased, at full scale)\n");
  if (o.accelerator.enabled()) {
    fmt::print(
        "# consumer: emulated accelerator '{}', {:.0f} images/s ({:.1f} ms per batch of {}); "
        "AU target {:.0f}%\n",
        o.emulate, o.accelerator.images_per_s(),
        o.accelerator.compute_ns(base.sampler.batch_size) / 1e6, base.sampler.batch_size,
        100 * o.au_target);
  } else {
    fmt::print("# consumer: none (batches are dropped as soon as they arrive)\n");
  }
  fmt::print("# source: {}{}\n", source_kind_name(base.source.kind),
             base.source.kind == SourceOptions::Kind::null
                 ? " (no I/O: every sample is the same JPEG; the loader's own overhead, as fio's "
                   "null engine)"
                 : "");
  fmt::print("# page cache: {}\n",
             o.cold ? "cold (files evicted with posix_fadvise(DONTNEED) before each run and "
                      "after each read)"
                    : "warm (each sample the runs will read, read once before them)");
  std::fflush(stdout);  // the context survives a redirect even if the run is cut short
}

void print_header() {
  constexpr const char* kHead =
      "{:<12} {:<7} {:<11} {:>9} {:>8} {:>7} {:>7} {:>7} {:>7} {:>8} {:>8} {:>8} {:>6} {:>6} {}\n";
  fmt::print(kHead, "dataset", "storage", "reader", "img/s", "MB/s", "read", "decode", "augment",
             "collate", "wait50", "wait90", "wait99", "cores", "errors", "checksum");
  fmt::print(kHead, "", "", "", "", "", "ms/img", "ms/img", "ms/img", "ms/img", "ms", "ms", "ms",
             "", "", "(epoch 0)");
}

// One dataset as the runs see it: indexed, and warmed unless the page cache is cold.
struct BenchDataset {
  std::string root;
  Index index;
  double index_s = 0;
  WarmStats warm;
  std::string evict_root;  // --cold: what is evicted before each run (the server's files, nfs)
  nlohmann::json caches;   // which caches its runs read cold: client's and server's
};

BenchDataset open_bench_dataset(const std::string& root, const BenchOptions& o,
                                const LoaderConfig& base) {
  const int64_t i0 = now_ns();
  BenchDataset d{root, open_index(root)};
  const Index& index = d.index;
  d.index_s = (now_ns() - i0) * 1e-9;
  const uint64_t total = index.total_bytes();
  fmt::print(
      "# dataset {}: {} images, {} classes, {:.1f} MB (mean {:.1f} KB), indexed in {:.3f} s\n",
      root, index.size(), index.classes.size(), total / 1e6,
      index.size() ? total / 1e3 / index.size() : 0.0, d.index_s);
  warn_empty_classes(index.empty_classes, root);
  if (is_nfs_url(index.root)) {
    // The page cache that matters is the NFS server's: not ours to evict, so no cold run.
    if (o.cold && !o.server_cold)
      fail(
          "--cold with {}: the page cache is the NFS server's; evict it there, or add "
          "--server-cold where the server runs on this machine (scripts/nfs_serve.sh)",
          root);
    if (o.cold) {
      d.evict_root = server_cold_root(index);
      fmt::print(
          "# nfs: the server's page cache is cold: its files under {} are evicted on this "
          "machine before each run (--server-cold; not between epochs: a later epoch may find "
          "them in the server's cache); one libnfs connection per thread or process\n",
          d.evict_root);
    } else {
      fmt::print(
          "# nfs: page cache on the server, warmed below; one libnfs connection per "
          "thread or process\n");
    }
    d.caches = {{"client", "none"}, {"server", o.cold ? "cold" : "warm"}};
  } else {
    if (o.cold) d.evict_root = index.root;
    d.caches = {{"client", o.cold ? "cold" : "warm"}, {"server", "none"}};
  }
  if (!o.cold && index.size() > 0) {  // an empty dataset: the run names it below
    // Only what the runs read: the samples of their batches in the sampler's order (with
    // --seconds, all they could read within --epochs and --max-batches), not the dataset.
    const int64_t w0 = now_ns();
    d.warm = warm_samples(index, run_samples(index, base.sampler, o.epochs, o.max_batches));
    fmt::print(
        "# warm-up: read {} samples, {:.1f} MB in {:.2f} s (those the runs' batches read{})\n",
        d.warm.files, d.warm.bytes / 1e6, (now_ns() - w0) * 1e-9,
        is_nfs_url(index.root) ? ", through the NFS server: its page cache is warm, as ours is "
                                 "for a local run"
                               : "");
    std::fflush(stdout);
  }
  return d;
}

// One reader over one dataset: its row, its JSON result, its trace (run number `run`).
nlohmann::json bench_run(const BenchDataset& d, const LoaderConfig& base,
                         const std::optional<ReaderSpec>& reader, const BenchOptions& o, size_t run,
                         TraceWriter& trace_writer) {
  if (!d.evict_root.empty()) {
    const size_t failed = evict_from_page_cache(d.index, d.evict_root);
    if (failed)
      fmt::print("# warning: {} files could not be evicted from the page cache\n", failed);
  }
  LoaderConfig config = base;
  // auto starts with the reader its search starts from (tuning_candidates.h).
  config.reader = reader ? *reader : auto_start_reader(online_cpus());
  const std::string name = reader ? reader->text() : "auto";
  nlohmann::json r;
  RunTrace run_trace;
  const LoaderStats s =
      run_one(d.index, config, o, !reader, r, o.trace.empty() ? nullptr : &run_trace);
  if (!o.trace.empty())
    add_run_trace(trace_writer, run, fmt::format("{} {}", short_name(d.root), name), run_trace);
  print_row(short_name(d.root), storage_of(d.root), name, s, r);
  if (r.contains("steady")) {
    const auto& st = r["steady"];
    if (st.contains("not_enough_data"))
      fmt::print("# steady state (after {} batches): {}\n", st["warmup"].get<size_t>(),
                 st["not_enough_data"].get<std::string>());
    else
      fmt::print("# steady state (after {} batches): {:.0f} img/s over {:.2f} s\n",
                 st["warmup"].get<size_t>(), st["images_per_s"].get<double>(),
                 st["seconds"].get<double>());
  }
  if (r.contains("stopped_after_seconds"))
    fmt::print("# stopped after {} s (--seconds) at a batch boundary: {} images\n", o.seconds,
               s.images);
  if (r.contains("interrupted"))
    fmt::print("# interrupted: the row above covers the first {} images of the run\n", s.images);
  if (r.contains("incomplete"))
    fmt::print(
        "# INCOMPLETE: the row above covers the first {} images of the run, which failed: {}\n",
        s.images, r["incomplete"].get<std::string>());
  r["dataset"] = d.root;
  r["storage"] = storage_of(d.root);
  // Each row's own cache state: local runs warmed or evicted; nfs:// runs warmed through the
  // server (its cache cannot be evicted from here, so --cold refuses an nfs:// dataset).
  r["page_cache"] = o.cold ? "cold" : "warm";
  r["caches"] = d.caches;
  r["dataset_images"] = d.index.size();
  r["dataset_bytes"] = d.index.total_bytes();
  r["index_seconds"] = d.index_s;
  if (!o.cold) r["warm"] = {{"files", d.warm.files}, {"bytes", d.warm.bytes}};
  return r;
}

void write_bench_outputs(const BenchOptions& o, const nlohmann::json& context,
                         const nlohmann::json& results, const TraceWriter& trace_writer) {
  if (!o.trace.empty()) {
    trace_writer.write(o.trace);
    fmt::print("# trace: {} (batches {}..{} of each run, {} events)\n", o.trace,
               o.trace_window.first, o.trace_window.last, trace_writer.events());
  }
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << nlohmann::json{{"context", context}, {"results", results}}.dump(2) << "\n";
    if (!out) fail("--json {}: cannot write: {}", o.json, errno_text(errno));
  }
  std::fflush(stdout);
}

void run_bench(BenchOptions& o) {
  install_interrupt_handlers();
  LoaderConfig base;
  const std::vector<std::optional<ReaderSpec>> readers = check_bench(o, base);
  use_default_dataset(o);
  check_shard_order(o, base);
  nlohmann::json context = bench_context(o);
  context["decode"] = o.decode;
  print_bench_context(o, base, context);

  nlohmann::json results = nlohmann::json::array();
  TraceWriter trace_writer;
  std::string failure;  // the run that failed: the rows before it and its own are kept
  for (const std::string& root : o.data) {
    const BenchDataset d = open_bench_dataset(root, o, base);
    for (const std::optional<ReaderSpec>& reader : readers) {
      if (interrupted()) break;
      if (results.empty()) print_header();
      results.push_back(bench_run(d, base, reader, o, results.size(), trace_writer));
      if (results.back().contains("incomplete"))
        failure = results.back()["incomplete"].get<std::string>();
      if (interrupted() || !failure.empty()) break;
    }
    if (interrupted() || !failure.empty()) break;
  }
  if (interrupted()) {
    context["interrupted"] = true;
    fmt::print("# interrupted: {} run(s) kept\n", results.size());
  }
  if (!failure.empty()) context["incomplete"] = true;
  write_bench_outputs(o, context, results, trace_writer);
  if (!failure.empty())
    fail("{} (the row{} measured until then {} kept{}, the last marked incomplete)", failure,
         results.size() == 1 ? "" : "s", results.size() == 1 ? "is" : "are",
         o.json.empty() ? "" : " in " + o.json);
  if (interrupted())
    throw Interrupted(fmt::format("bench: interrupted; {} row(s) above{}", results.size(),
                                  o.json.empty() ? "" : " and in " + o.json));
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Loader-only throughput: images/s, MB/s, time per stage");
  auto o = std::make_shared<BenchOptions>();
  cmd->add_option("data", o->data,
                  "Dataset roots (ImageFolder roots, list files, packed shards, nfs:// URLs); "
                  "none: the built-in "
                  "default at three resolutions");
  add_command_option(*cmd, "--epochs", o->epochs, {"Epochs per run"});
  cmd->add_option("--max-batches", o->max_batches, "Stop each run after this many batches")
      ->check(integer_in(1));
  add_command_option(*cmd, "--warmup", o->warmup,
                     {"Batches before the steady state's clock starts (start-up, the pool's first "
                      "fill)"});
  cmd->add_option("--seconds", o->seconds,
                  "Stop each run at the first batch boundary after this many seconds (start-up "
                  "included; with --max-batches, whichever comes first)")
      ->check(number_in(1e-3, 1e9));
  cmd->add_flag("--cold", o->cold,
                "Evict the dataset's files from the page cache before each run and after each "
                "read (measure storage)");
  cmd->add_flag("--server-cold", o->server_cold,
                "With --cold, nfs:// datasets too: their server runs on this machine and exports "
                "the URL's path as that same directory (scripts/nfs_serve.sh); its files are "
                "evicted here before each run");
  add_command_option(*cmd, "--json", o->json, {"Write results as one JSON document"});
  add_command_option(*cmd, "--decode", o->decode,
                     {.help = "cpu; or gpu: the CPU's half of train --decode gpu alone (read, "
                              "parse the header, plan the crop, copy the bytes for nvJPEG; decode "
                              "only what the GPU cannot take): how many cores GPU decode needs",
                      .words = {"cpu", "gpu"}});
  cmd->add_option("--default-root", o->default_root,
                  "Where the built-in default dataset is made when no dataset is given")
      ->capture_default_str();
  cmd->add_option("--emulate", o->emulate,
                  "Consume each batch like an accelerator: resnet50-h100 (400 images in "
                  "0.224 s), a rate (1786 or 1786img/s), or a time per N images (224ms/400)")
      ->check(parsed_by([](const std::string& s) { parse_emulation(s); }, "EMULATION"));
  cmd->add_option("--au-target", o->au_target,
                  "Accelerator utilisation a run must reach with --emulate")
      ->capture_default_str()
      ->check(number_in(0.0, 1.0));
  add_command_option(*cmd, "--trace", o->trace,
                     {"Write a Chrome trace-event JSON (Perfetto) of the --trace-batches window "
                      "of each run: the consumer's wait and emulated compute per batch, and a "
                      "track per loader thread (read, decode, augment, collate per sample)"});
  cmd->add_option("--trace-batches", o->trace_batches,
                  "Batches [A, B) of each run kept for --trace, counted from 0 (default: 0:20)")
      ->check(parsed_by([](const std::string& s) { parse_trace_window(s, "", "batches"); }, "A:B"));
  o->loader.reader = fmt::format("serial,threads:{}", online_cpus());
  o->loader.add_to(*cmd);
  cmd->callback([o] { run_bench(*o); });
}

}  // namespace stoker
