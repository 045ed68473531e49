// SPDX-License-Identifier: Apache-2.0
#include "tools/study/study_cell.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "common/clock.h"
#include "common/error.h"
#include "common/interrupt.h"
#include "common/measures.h"
#include "common/stats.h"
#include "common/system_info.h"
#include "loader/iterator.h"
#include "loader/loader_stats.h"
#include "loader/tuning/tuning_candidates.h"
#include "tools/bench/emulated_consumer.h"
#include "tools/per_size.h"
#include "tools/setup/train_options.h"
#include "tools/setup/trainer.h"
#include "tools/tuning_report.h"
#include "train/backend.h"
#include "train/checkpoint.h"
#include "train/gpu_decode.h"
#include "train/loader_feed.h"
#include "train/train_loop.h"

namespace stoker {

namespace {

// One timed step as every consumer reports it: the consumer's wait for the batch, its stage
// on the engine (the copy in), the engine's work, the step's window, and the batch's loader
// timings.
struct Step {
  int64_t begin_ns = 0, end_ns = 0;
  double wait = 0, stage = 0, compute = 0;  // seconds
  int height = 0, width = 0;                // the batch's size (a size schedule changes it)
  std::vector<SampleTiming> samples;
};

// The timed steps grouped by batch size (tools/per_size.h): a size schedule's cost per
// resolution (the report's step breakdown shows it).
nlohmann::json per_size(const std::vector<Step>& steps, size_t batch) {
  std::vector<SizeCost> sizes;
  for (const Step& s : steps) {
    SizeCost& z = size_cost(sizes, s.height, s.width);
    ++z.steps;
    z.add_timed(double(s.end_ns - s.begin_ns) * 1e-9, s.wait, s.stage, s.compute,
                int64_t(s.samples.empty() ? batch : s.samples.size()));
  }
  return per_size_json(sizes);
}

[[noreturn]] void stop_for_interrupt() {
  throw Interrupted("study interrupted");
}

// The loader feed, polling the interrupt flag before each batch: the training loop then
// stops between steps.
class InterruptibleFeed final : public BatchFeed {
 public:
  explicit InterruptibleFeed(BatchFeed& inner) : inner_(inner) {}
  HostBatch next() override {
    if (interrupted()) stop_for_interrupt();
    return inner_.next();
  }
  std::span<const SampleTiming> timings() const override { return inner_.timings(); }

 private:
  BatchFeed& inner_;
};

// The trace excerpt of one step: where each sample of its batch was read, decoded,
// augmented and collated, relative to the step's start (stages laid end to end from the
// sample's start, as the loader records durations).
nlohmann::json step_trace(const Step& s, size_t number, std::map<int32_t, int>& workers) {
  nlohmann::json samples = nlohmann::json::array();
  const double ms = 1e-6;
  for (const SampleTiming& t : s.samples) {
    if (t.start_ns == 0) continue;
    const auto [it, added] = workers.emplace(t.thread, int(workers.size()));
    int64_t at = t.start_ns - s.begin_ns;
    const std::pair<const char*, int64_t> stages[] = {{"read", t.read_ns},
                                                      {"decode", t.decode_ns},
                                                      {"augment", t.augment_ns},
                                                      {"collate", t.collate_ns}};
    for (const auto& [stage, ns] : stages) {
      if (ns <= 0) continue;
      samples.push_back({{"worker", it->second},
                         {"stage", stage},
                         {"begin_ms", double(at) * ms},
                         {"end_ms", double(at + ns) * ms}});
      at += ns;
    }
  }
  return {{"step", number},
          {"wait_ms", 1e3 * s.wait},
          {"compute_ms", 1e3 * s.compute},
          {"begin_ms", 0.0},
          {"end_ms", double(s.end_ns - s.begin_ns) * ms},
          {"samples", samples}};
}

// With no warm-up the first step's wait is start-up (the iterator's first fill): the
// window opens at its batch's arrival instead (window_open_ns, common/measures.h), so the
// wait is left out of every figure of the window, as bench leaves it out.
void leave_out_start_up(std::vector<Step>& steps, size_t warmup) {
  if (steps.empty()) return;
  Step& first = steps.front();
  const int64_t arrived = first.begin_ns + std::llround(first.wait * 1e9);
  first.begin_ns = window_open_ns(warmup, first.begin_ns, arrived);
  if (warmup == 0) first.wait = 0;
}

// The measured fields of a cell from its timed steps. `gap_share`: the engine's idle share
// of the window, as the consumer measured it.
nlohmann::json summarise(const std::vector<Step>& steps, size_t batch, double gap_share,
                         const char* gap_kind, double cpu_seconds, double elapsed_s) {
  STOKER_CHECK(!steps.empty());
  const double wall = double(steps.back().end_ns - steps.front().begin_ns) * 1e-9;
  double wait = 0, stage = 0, compute = 0;
  double read = 0, decode = 0, augment = 0, collate = 0;
  uint64_t bytes = 0, images = 0;
  std::vector<double> waits;
  nlohmann::json per_step = nlohmann::json::array();
  for (const Step& s : steps) {
    wait += s.wait;
    stage += s.stage;
    compute += s.compute;
    waits.push_back(s.wait);
    per_step.push_back({1e3 * s.wait, 1e3 * s.compute});
    for (const SampleTiming& t : s.samples) {
      read += double(t.read_ns);
      decode += double(t.decode_ns);
      augment += double(t.augment_ns);
      collate += double(t.collate_ns);
      bytes += t.bytes;
    }
    images += s.samples.empty() ? batch : s.samples.size();
  }
  const double n = images ? double(images) : 1.0;
  const double wait_share = data_wait_share(wait, wall);
  const double read_ms = read / 1e6 / n, decode_ms = decode / 1e6 / n,
               augment_ms = augment / 1e6 / n, collate_ms = collate / 1e6 / n;
  // The slowest and the fastest step (by their window), for the trace excerpt.
  size_t slow = 0, fast = 0;
  for (size_t k = 0; k < steps.size(); ++k) {
    const int64_t d = steps[k].end_ns - steps[k].begin_ns;
    if (d > steps[slow].end_ns - steps[slow].begin_ns) slow = k;
    if (d < steps[fast].end_ns - steps[fast].begin_ns) fast = k;
  }
  std::map<int32_t, int> workers;
  nlohmann::json cell = {
      {"steps", steps.size()},
      {"batch", batch},
      {"wall_s", wall},
      {"images", images},
      {"images_per_s", images_per_s(double(images), wall)},
      {"read_mb_per_s", wall > 0 ? double(bytes) / 1e6 / wall : 0.0},
      {"data_wait_share", wait_share},
      {"accelerator_utilisation", accelerator_utilisation(compute, wall)},
      {"gap_share", gap_share},
      {"gap_kind", gap_kind},
      {"step_s",
       {{"wait", wait},
        {"stage", stage},
        {"compute", compute},
        {"gap", gap_remainder(wall, wait, stage, compute)}}},
      {"cpu_ms_per_image",
       {{"read", read_ms},
        {"decode", decode_ms},
        {"augment", augment_ms},
        {"collate", collate_ms}}},
      {"cores_used", elapsed_s > 0 ? cpu_seconds / elapsed_s : 0.0},
      {"wait_ms",
       {{"p50", 1e3 * quantile(waits, 0.5)},
        {"p90", 1e3 * quantile(waits, 0.9)},
        {"p99", 1e3 * quantile(waits, 0.99)}}},
      {"steps_ms", per_step},
      {"per_size", per_size(steps, batch)},
      {"bound", study_bound(wait_share, read_ms, decode_ms, augment_ms, collate_ms)}};
  cell["trace"] = {{"slow", step_trace(steps[slow], slow, workers)},
                   {"fast", step_trace(steps[fast], fast, workers)}};
  return cell;
}

// The emulated accelerator: holds each batch for its compute time; idle otherwise. The
// measuring loop and the idle share are bench's (tools/bench/emulated_consumer.h).
// --reader auto's part of a cell: the reader it ran last, and what it did.
nlohmann::json tuning_fields(const ReaderTuner& tuner) {
  const std::vector<TuningSearch> searches = tuner.report();
  const ReaderSpec ran = searches.empty() ? ReaderSpec{} : searches.back().chosen.reader;
  return {{"threads", ran.threads},
          {"auto_reader", ran.text()},
          {"reader_tuning", tuning_json(searches)}};
}

nlohmann::json run_emulated(const Index& index, const LoaderConfig& config,
                            const StudyConsumer& consumer, const CellRun& run,
                            const std::optional<TunerLimits>& tune) {
  const double cpu0 = process_cpu_seconds();
  const int64_t t0 = now_ns();
  auto iterator = std::make_unique<Iterator>(index, config);
  if (iterator->batches_per_epoch() == 0)
    fail("{} has {} images, fewer than one batch of {}", index.root, index.size(),
         config.sampler.batch_size);
  std::unique_ptr<ReaderTuner> tuner;
  if (tune)
    tuner = std::make_unique<ReaderTuner>(*iterator,
                                          reader_candidates(online_cpus(), config.prefetch), *tune);
  std::vector<Step> steps;
  std::string checksum;
  ConsumerRun measured;
  measured.batches = size_t(run.warmup + run.steps);
  measured.warmup = size_t(run.warmup);
  measured.tuner = tuner.get();
  const ConsumerResult consumed = consume(
      *iterator, consumer.accelerator, measured,
      [&](const ConsumedBatch& c) {
        if (c.number < measured.warmup) return;
        const Batch& b = *c.batch;
        Step s;
        s.begin_ns = c.asked_ns;
        s.end_ns = c.released_ns;
        s.wait = double(c.arrived_ns - c.asked_ns) * 1e-9;
        // The emulated accelerator's nominal compute (common/measures.h, AU): its oversleep
        // on a loaded machine is not compute; it stays in the step (gap), and is not idle
        // either (the idle share counts it held: gap_share below).
        s.compute = double(consumer.accelerator.compute_ns(b.size)) * 1e-9;
        s.height = b.spec.height;
        s.width = b.spec.width;
        s.samples.assign(b.timing.begin(), b.timing.begin() + ptrdiff_t(b.size));
        steps.push_back(std::move(s));
      },
      [&](uint64_t epoch, uint64_t sum) {
        if (epoch == 0) checksum = hex64(sum);
      });
  if (consumed.interrupted) stop_for_interrupt();
  const nlohmann::json tuned = tuner ? tuning_fields(*tuner) : nlohmann::json(nullptr);
  tuner.reset();
  iterator.reset();  // reaps worker processes, so their CPU time is counted
  const double elapsed = double(now_ns() - t0) * 1e-9;
  leave_out_start_up(steps, measured.warmup);
  nlohmann::json cell = summarise(steps, config.sampler.batch_size, consumed.use.idle_share(),
                                  "emulated", process_cpu_seconds() - cpu0, elapsed);
  if (!checksum.empty()) cell["checksum"] = checksum;
  if (!tuned.is_null()) cell.update(tuned);
  return cell;
}

// The trainer on a backend ("cpu" or "cuda"): the training loop's own records; the engine's
// gaps between primitives (CPU) or kernels (GPU) from the backend's activity records.
nlohmann::json run_trainer(const Index& index, LoaderConfig config, const StudyConsumer& consumer,
                           const CellRun& run, const std::optional<TunerLimits>& tune) {
  const double cpu0 = process_cpu_seconds();
  const int64_t t0 = now_ns();
  // The trainer of a cell: the consumer's model and engine, every other option its default.
  const bool cuda = consumer.kind == StudyConsumer::Kind::cuda;
  TrainOptions t;
  t.arch = consumer.arch;
  t.classes = std::max<int>(1, int(index.classes.size()));
  t.backend = cuda ? "cuda" : "cpu";
  const Network net = trainer_network(t);
  const int64_t batch = int64_t(config.sampler.batch_size);
  // Under a size schedule: planned for the first step's size, re-planned as it changes.
  BackendConfig bc = trainer_backend_config(t, config, batch);
  bc.record_activity = true;
  std::unique_ptr<Backend> backend = trainer_backend(t, net, bc, nullptr, "", config.sampler.seed);
  // The loader's batches, decoded by nvJPEG into the backend's input in a cuda consumer's
  // gpu-decode cell.
  TrainerFeed data = trainer_feed(index, config, *backend, Position{0, 0}, {}, tune);
  if (data.iterator->batches_per_epoch() == 0)
    fail("{} has {} images, fewer than one batch of {}", index.root, index.size(), batch);
  InterruptibleFeed feed(data.feed());
  const int64_t total = run.warmup + run.steps;
  LoopConfig loop = trainer_loop(t, 0, total, total, batch, run.warmup);
  loop.progress = false;
  loop.label = fmt::format("study {}", consumer.name);
  loop.activity = true;
  loop.trace_begin = run.warmup;
  loop.trace_end = total;
  const LoopResult result = train_loop(*backend, feed, loop);
  // The trace window holds the timed steps' loader timings, by global step number.
  std::map<int64_t, const std::vector<SampleTiming>*> timings;
  for (size_t j = 0; j < result.trace.numbers.size() && j < result.trace.samples.size(); ++j)
    timings[result.trace.numbers[j]] = &result.trace.samples[j];
  std::vector<Step> steps;
  for (size_t k = size_t(run.warmup); k < result.records.size(); ++k) {
    const StepRecord& r = result.records[k];
    Step s;
    s.begin_ns = r.begin_ns;
    s.end_ns = r.end_ns;
    s.wait = r.wait;
    s.stage = r.stage;
    s.height = int(r.height);
    s.width = int(r.width);
    // The engine's busy time when it was recorded; the backend's phase times otherwise.
    s.compute = step_compute(r.busy, r.forward, r.backward, r.update);
    if (auto it = timings.find(int64_t(k)); it != timings.end()) s.samples = *it->second;
    steps.push_back(std::move(s));
  }
  nlohmann::json decode;
  if (data.gpu) {
    const GpuDecodeReport d = data.gpu->report();
    decode = {{"decoder", d.decoder},       {"hardware", d.hardware},     {"hybrid", d.hybrid},
              {"engine_cpu", d.engine_cpu}, {"loader_cpu", d.loader_cpu}, {"failed", d.failed}};
  }
  const nlohmann::json tuned = data.tuner ? tuning_fields(*data.tuner) : nlohmann::json(nullptr);
  // The feeds, then the iterator (reaping worker processes), all before the backend.
  data.gpu.reset();
  data.loader.reset();
  data.tuner.reset();
  data.iterator.reset();
  backend.reset();
  const double elapsed = double(now_ns() - t0) * 1e-9;
  leave_out_start_up(steps, size_t(run.warmup));
  nlohmann::json cell =
      summarise(steps, size_t(batch), result.gaps.share(), cuda ? "kernel" : "primitive",
                process_cpu_seconds() - cpu0, elapsed);
  if (!decode.is_null()) cell["gpu_decode"] = decode;
  if (!tuned.is_null()) cell.update(tuned);
  return cell;
}

}  // namespace

nlohmann::json run_study_cell(const Index& index, const LoaderConfig& config,
                              const StudyConsumer& consumer, const CellRun& run,
                              const std::optional<TunerLimits>& tune) {
  if (run.steps < 1) fail("--steps must be at least 1");
  if (consumer.kind == StudyConsumer::Kind::emulated)
    return run_emulated(index, config, consumer, run, tune);
  return run_trainer(index, config, consumer, run, tune);
}

}  // namespace stoker
