// SPDX-License-Identifier: Apache-2.0
// What one rank of `stoker train` prints and writes (tools/train/train_rank.h): the `#` context
// lines, the summary table, the trace, the data checksums and the --json document
// (docs/FORMATS.md).
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <optional>

#include "common/error.h"
#include "common/measures.h"
#include "common/stats.h"
#include "common/system_info.h"
#include "loader/loader_stats.h"
#include "tools/json_document.h"
#include "tools/train/train_rank.h"
#include "tools/train/train_sizes.h"
#include "tools/tuning_report.h"
#include "train/device_peak.h"
#include "train/loop_trace.h"
#include "train/step_account.h"
#include "train/step_summary.h"

namespace stoker {
namespace {

nlohmann::json ms_stats(const std::vector<double>& seconds) {
  double sum = 0;
  for (double s : seconds) sum += s;
  return {{"median", 1e3 * median(seconds)},
          {"p10", 1e3 * quantile(seconds, 0.1)},
          {"p90", 1e3 * quantile(seconds, 0.9)},
          {"mean", seconds.empty() ? 0.0 : 1e3 * sum / double(seconds.size())}};
}

// Whether the backend's engine runs behind the host (its steps are windowed by its own
// records and clock).
bool result_asynchronous(const TrainRun& run) {
  return run.backend->caps().asynchronous;
}

nlohmann::json account_json(const StepAccount& a) {
  return {{"wall_s", a.wall},
          {"wait_s", a.wait},
          {"stage_s", a.stage},
          {"compute_s", a.compute},
          {"timed_compute_s", a.timed_compute},
          {"gaps_s", a.gaps},
          {"residual_s", a.residual()},
          {"balanced", a.balanced()},
          {"measured", a.measured},
          {"wall_from", wall_from_name(a.wall_from)}};
}

nlohmann::json per_step_json(const TrainRun& run, const std::vector<StepRecord>& records) {
  nlohmann::json steps = nlohmann::json::array();
  for (const StepRecord& r : records) {
    steps.push_back({{"height", r.height > 0 ? r.height : run.height},
                     {"width", r.width > 0 ? r.width : run.width},
                     {"reshape_s", r.reshape},
                     {"wait_s", r.wait},
                     {"stage_s", r.stage},
                     {"forward_s", r.forward},
                     {"backward_s", r.backward},
                     {"update_s", r.update},
                     {"host_enqueue_s", r.host_enqueue},
                     {"allreduce_wait_s", r.allreduce_wait},
                     {"total_s", r.total}});
    if (run.loop.activity)
      steps.back().update({{"busy_s", r.busy},
                           {"gap_s", r.gap},
                           {"gaps", r.gaps},
                           {"longest_gap_s", r.longest_gap},
                           {"gap_during_wait_s", r.gap_during_wait}});
    steps.back()["account"] =
        account_json(account_step(r, result_asynchronous(run), run.loop.activity));
  }
  return steps;
}

nlohmann::json algorithms_json(Backend& backend) {
  nlohmann::json algos = nlohmann::json::array();
  for (const ConvChoice& a : backend.diagnostics().algorithms())
    algos.push_back({{"layer", a.layer},
                     {"pass", a.pass},
                     {"algorithm", a.algorithm},
                     {"workspace_bytes", a.workspace_bytes},
                     {"measured_ms", a.measured_ms}});
  return algos;
}

nlohmann::json gaps_json(const GapStats& gaps) {
  const Histogram& h = gaps.histogram;
  return {{"window_s", 1e-9 * double(gaps.window_ns)},
          {"busy_s", 1e-9 * double(gaps.busy_ns)},
          {"gap_s", 1e-9 * double(gaps.gap_ns)},
          {"share", gaps.share()},
          {"count", gaps.gaps},
          {"longest_ms", 1e-6 * double(gaps.longest_ns)},
          {"during_data_wait_s", 1e-9 * double(gaps.during_wait_ns)},
          {"gap_us",
           {{"p50", 1e-3 * h.quantile_ns(0.5)},
            {"p90", 1e-3 * h.quantile_ns(0.9)},
            {"p99", 1e-3 * h.quantile_ns(0.99)},
            {"max", 1e-3 * h.quantile_ns(1.0)},
            {"mean", 1e-3 * h.mean_ns()}}}};
}

nlohmann::json device_json(Backend& backend) {
  if (!backend.caps().device) return nullptr;
  const DeviceReport dev = backend.diagnostics().device_report();
  return {{"planned_bytes", dev.planned_bytes},
          {"peak_in_use_bytes", dev.peak_in_use_bytes},
          {"total_bytes", dev.total_bytes},
          {"activity_records_lost", dev.activity_lost}};
}

// Each record's seconds on the engine's clock, re-plans left out (account_step leaves a
// host window's out; a device's window holds none: it idles through it in the step before).
std::vector<double> engine_seconds(const TrainRun& run, const LoopResult& result) {
  std::vector<double> out;
  for (const StepRecord& r : result.records)
    out.push_back(account_step(r, result.asynchronous, run.loop.activity).wall);
  return out;
}

std::vector<SizeCost> sizes_of(const TrainRun& run, const LoopResult& result, size_t skipped) {
  return cost_per_size(result.records, skipped, run.height, run.width, run.global_batch, run.net,
                       engine_seconds(run, result));
}

StepSummary summary_of(const TrainRun& run, const LoopResult& result) {
  return summarise_steps(result.records, size_t(run.loop.warmup), result.asynchronous,
                         run.loop.activity);
}

// The run's rate, from the engine's time (on a device its own), and on a device the check
// against its peak: a rate it cannot reach is withheld (train/device_peak.h).
struct Rate {
  double images_per_s = 0, flop_per_image = 0;
  std::optional<RateCheck> check;  // a device's
  bool withheld() const { return check && !check->plausible; }
};

Rate rate_of(const TrainRun& run, const LoopResult& result, const StepSummary& s) {
  Rate r;
  // Every rank's images: the job's throughput (each rank's steps are the same steps).
  r.images_per_s = images_per_s(double(run.global_batch) * double(s.total.size()), s.wall);
  // Under a size schedule the work per image changes: the timed steps' mean.
  r.flop_per_image = mean_flop_per_image(sizes_of(run, result, s.skipped));
  if (run.backend->caps().device) {
    const DeviceReport dev = run.backend->diagnostics().device_report();
    r.check = check_rate(r.images_per_s, r.flop_per_image, device_peak(dev.name, run.bc.precision));
  }
  return r;
}

nlohmann::json rate_check_json(const Rate& r) {
  if (!r.check) return nullptr;
  const RateCheck& c = *r.check;
  return {{"plausible", c.plausible},
          {"implied_tflop_per_s", c.implied_flops / 1e12},
          {"peak_tflop_per_s", c.peak.flops / 1e12},
          {"peak_basis", c.peak.basis},
          {"refused_images_per_s",
           c.plausible ? nlohmann::json(nullptr) : nlohmann::json(r.images_per_s)},
          {"message", c.message}};
}

nlohmann::json accounting_json(const StepSummary& s) {
  nlohmann::json j = account_json(s.account_total);
  j.erase("balanced");
  j["tolerance"] = StepAccount::kTolerance;
  j["unbalanced_steps"] = s.unbalanced;
  return j;
}

// The timed steps' figures: throughput, FLOP, totals and per-phase statistics.
nlohmann::json timing_json(const TrainRun& run, const LoopResult& result) {
  const StepSummary s = summary_of(run, result);
  const Rate rate = rate_of(run, result, s);
  const std::vector<SizeCost> per_size = sizes_of(run, result, s.skipped);
  std::vector<double> engine_wall;
  for (const StepAccount& a : s.account) engine_wall.push_back(a.wall);
  const auto unless_withheld = [&](double v) {
    return rate.withheld() ? nlohmann::json(nullptr) : nlohmann::json(v);
  };
  return {{"per_size", per_size_json(per_size)},
          {"warmup", s.skipped},
          {"images_per_s", unless_withheld(rate.images_per_s)},
          {"flop_per_image", rate.flop_per_image},
          {"achieved_gflop_per_s", unless_withheld(rate.images_per_s * rate.flop_per_image / 1e9)},
          {"rate_check", rate_check_json(rate)},
          {"data_wait_share", data_wait_share(s.wait_s, s.host_wall)},
          {"accounting", accounting_json(s)},
          {"totals_s",
           {{"wall", s.wall},
            {"host_wall", s.host_wall},
            {"data_wait", s.wait_s},
            {"stage", s.stage_s},
            {"forward", s.forward_s},
            {"backward", s.backward_s},
            {"update", s.update_s}}},
          {"engine_step_ms", ms_stats(engine_wall)},
          {"step_ms", ms_stats(s.total)},
          {"data_wait_ms", ms_stats(s.wait)},
          {"stage_ms", ms_stats(s.stage)},
          {"forward_ms", ms_stats(s.forward)},
          {"backward_ms", ms_stats(s.backward)},
          {"update_ms", ms_stats(s.update)}};
}

}  // namespace

void print_context(const TrainRun& run, const TrainCommand& o) {
  const TrainOptions& t = o.train;
  const LoaderConfig& lc = run.lc;
  fmt::print("# stoker train {} (built {})\n", STOKER_VERSION, __DATE__);
  fmt::print("# machine: {}, {} cores, Linux {}\n", cpu_model(), online_cpus(), kernel_release());
  fmt::print("# backend: {}\n", run.backend->describe());
  if (run.world.world() > 1)
    fmt::print("# data parallel: {}, batch {} per rank, global batch {}\n", run.world.describe(),
               run.batch, run.global_batch);
  fmt::print(
      "# model: {} ({} classes), {}x{} (HxW) input{}, batch {}, {:.2f} GFLOP per trained image\n",
      run.net.name, t.classes, run.height, run.width,
      lc.size_schedule.active() ? fmt::format(" first, size schedule {}", lc.size_schedule.text())
                                : "",
      run.global_batch, run.flop_per_image / 1e9);
  fmt::print("# data: {}\n",
             o.synthetic
                 ? "synthetic (random tensors drawn once: compute alone)"
                 : fmt::format("{} ({} images, {} classes), reader {}, transform {}, {}", o.data,
                               run.index->size(), run.index->classes.size(),
                               run.auto_reader ? "auto (chosen by the training step's rate; "
                                                 "lines '# reader auto' below)"
                                               : lc.reader.text(),
                               transform_name(lc.transform.kind),
                               lc.sampler.shuffle ? "shuffled" : "fixed order"));
  fmt::print(
      "# optimiser: SGD lr {:.4g} ({}{}), momentum {}, {}weight decay {}{}, label "
      "smoothing {}\n",
      run.loop.schedule.base_lr, t.schedule_kind,
      t.lr_warmup ? fmt::format(", {} warm-up steps", t.lr_warmup) : "", t.momentum,
      t.nesterov ? "Nesterov, " : "", t.weight_decay, t.bn_decay ? "" : " (not on BN and biases)",
      t.label_smoothing);
  fmt::print("# run: steps {}..{} of {}{}\n", run.state.step, run.state.step + run.steps,
             run.schedule_steps,
             run.start ? fmt::format(", from {}", o.resume.empty() ? o.init : o.resume) : "");
  fmt::print("{}", run.schedule_change);
  if (!o.save.empty())
    fmt::print("# save: {} at the end and on Ctrl-C{}\n", o.save,
               run.default_save      ? " (--save chooses the file, --no-save keeps none)"
               : run.save_to_resumed ? " (the file resumed from, replaced: --save FILE keeps it)"
                                     : "");
  else
    fmt::print("# save: none ({})\n",
               o.no_save ? "--no-save" : "--synthetic keeps none unless --save names one");
  // --reader auto's core split, measured before the backend above was made with its choice.
  if (run.core_split) {
    fmt::print("{}", core_split_lines(*run.core_split));
  } else if (run.core_split_threads > 0) {
    fmt::print("# core split: {} compute thread{}, chosen when the run began (kept from {})\n",
               run.core_split_threads, run.core_split_threads == 1 ? "" : "s", o.resume);
  } else if (!run.core_split_skipped.empty()) {
    fmt::print("# core split: {}\n", run.core_split_skipped);
  }
}

void print_summary(const TrainRun& run, const LoopResult& result) {
  const std::vector<StepRecord>& records = result.records;
  const StepSummary s = summary_of(run, result);
  const Rate rate = rate_of(run, result, s);
  if (rate.withheld()) fmt::print(stderr, "stoker: train: {}\n", rate.check->message);
  std::vector<double> engine_wall;
  for (const StepAccount& a : s.account) engine_wall.push_back(a.wall);
  fmt::print("{:>8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>7} {:>8} {:>10}\n", "steps",
             "img/s", "step ms", "wait ms", "fwd ms", "bwd ms", "upd ms", "wait %", "gap %",
             "GFLOP/s", "loss");
  fmt::print(
      "{:>8} {:>8} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>9.1f} {:>7.1f} {:>7} {:>8} "
      "{:>10.4f}\n",
      s.total.size(), rate.withheld() ? std::string("-") : fmt::format("{:.2f}", rate.images_per_s),
      1e3 * median(engine_wall), 1e3 * median(s.wait), 1e3 * median(s.forward),
      1e3 * median(s.backward), 1e3 * median(s.update), 100 * s.wait_s / s.host_wall,
      run.loop.activity ? fmt::format("{:.1f}", 100 * result.gaps.share()) : "-",
      rate.withheld() ? std::string("-")
                      : fmt::format("{:.1f}", rate.images_per_s * rate.flop_per_image / 1e9),
      records.back().loss);
  const StepAccount& t = s.account_total;
  if (t.wall_from != StepAccount::WallFrom::host)
    fmt::print("# step times: the {} (the host's loop: {:.1f} ms a step)\n",
               wall_from_name(t.wall_from), 1e3 * median(s.total));
  if (s.unbalanced > 0)
    fmt::print(
        "# accounting: {} of {} timed steps off by more than {:.0f}%: wait {:.3f} + stage {:.3f} "
        "+ compute {:.3f} + gaps {:.3f} s = wall {:.3f} s; the backend's timers: compute {:.3f} s, "
        "{:.3f} s unexplained (train/step_account.h)\n",
        s.unbalanced, s.account.size(), 100 * StepAccount::kTolerance, t.wait, t.stage, t.compute,
        t.gaps, t.wall, t.timed_compute, t.residual());
  const std::vector<SizeCost> per_size = sizes_of(run, result, s.skipped);
  if (per_size.size() > 1) print_per_size(per_size);
  if (run.loop_wall_s > 0)
    fmt::print("# cpu: {:.1f} cores busy over the loop ({:.1f} s of CPU time in {:.1f} s)\n",
               run.loop_cpu_s / run.loop_wall_s, run.loop_cpu_s, run.loop_wall_s);
  if (run.data.gpu) {
    const GpuDecodeReport d = run.data.gpu->report();
    fmt::print(
        "# gpu decode: {} batches; hardware {}, hybrid {} (whole image {}), nvJPEG refused {}, "
        "undecodable {}; the loader's CPU decoded {}{}{}{}; {:.1f} ms host time a batch\n",
        d.batches, d.hardware, d.hybrid, d.whole_image, d.engine_cpu, d.failed, d.loader_cpu,
        d.loader_cpu ? " (" : "", d.loader_cpu_reasons, d.loader_cpu ? ")" : "",
        d.batches ? 1e3 * d.host_s / double(d.batches) : 0.0);
  }
}

// --reader auto's core split: the search, or the count a resumed run kept; null: not chosen.
nlohmann::json core_split_of(const TrainRun& run) {
  if (run.core_split) return core_split_json(*run.core_split);
  if (run.core_split_threads > 0)
    return {{"compute_threads", run.core_split_threads}, {"kept", true}};
  if (!run.core_split_skipped.empty())
    return {{"compute_threads", nullptr}, {"not_searched", run.core_split_skipped}};
  return nullptr;
}

nlohmann::json decode_json(const TrainRun& run) {
  nlohmann::json j = {{"device", run.lc.decode_device == DecodeDevice::gpu ? "gpu" : "cpu"},
                      {"reason", run.decode.reason}};
  if (!run.data.gpu) return j;
  const GpuDecodeReport d = run.data.gpu->report();
  j["gpu"] = {{"decoder", d.decoder},       {"batches", d.batches},
              {"parts", d.parts},           {"hardware", d.hardware},
              {"hybrid", d.hybrid},         {"whole_image", d.whole_image},
              {"engine_cpu", d.engine_cpu}, {"failed", d.failed},
              {"loader_cpu", d.loader_cpu}, {"loader_cpu_reasons", d.loader_cpu_reasons},
              {"host_s", d.host_s}};
  return j;
}

void write_trace(const TrainRun& run, const TrainCommand& o, const LoopResult& result) {
  if (!run.rank0 || o.trace.empty()) return;
  const TraceWriter tw = loop_trace(result.trace, o.train.backend);
  tw.write(o.trace);
  fmt::print("# trace: {} (steps {}..{}, {} events)\n", o.trace, run.trace_first, run.trace_last,
             tw.events());
}

// Which data each rank trained on: its epoch's chained batch checksum (every rank takes
// part; rank 0 writes them), stoker.Loader(rank=, world_size=)'s for the same shard. Not
// after an interrupt: a collective then would wait with the signal pending and stop the
// job before rank 0 saves.
nlohmann::json data_checksums(const TrainRun& run, const LoopResult& result, int64_t epoch) {
  if (!run.data.iterator || result.interrupted) return nullptr;
  std::vector<std::string> sums;
  for (int r = 0; r < run.world.world(); ++r) {
    uint64_t v = run.world.rank() == r ? run.data.iterator->epoch_checksum() : 0;
    if (run.world.world() > 1) run.world.broadcast(&v, sizeof v, r);
    sums.push_back(hex64(v));
  }
  return {{"epoch", epoch}, {"ranks", sums}};
}

void write_train_json(const TrainRun& run, const TrainCommand& o, const LoopResult& result,
                      const RunState& end, const nlohmann::json& checksums) {
  if (!run.rank0 || o.json.empty()) return;
  const TrainOptions& t = o.train;
  const std::vector<StepRecord>& records = result.records;
  std::vector<float> losses;
  std::vector<double> lrs;
  for (const StepRecord& r : records) {
    losses.push_back(r.loss);
    lrs.push_back(r.lr);
  }
  const nlohmann::json timing = timing_json(run, result);
  nlohmann::json doc = {
      {"tool", "stoker train"},
      {"version", STOKER_VERSION},
      {"backend", run.backend->describe()},
      {"arch", run.net.name},
      {"classes", t.classes},
      {"precision", t.precision},
      {"conv_algo", t.conv_algo},
      {"threads", run.bc.threads},
      {"batch", run.batch},
      {"global_batch", run.global_batch},
      {"world", run.world.world()},
      {"collective", run.world.describe()},
      {"image_size", run.width},
      {"image_height", run.height},
      {"size_schedule", run.lc.size_schedule.text()},
      {"synthetic", o.synthetic},
      {"data", o.data},
      {"reader", o.synthetic       ? ""
                 : run.auto_reader ? "auto"
                                   : run.lc.reader.text()},
      {"reader_tuning",
       run.data.tuner ? tuning_json(run.data.tuner->report()) : nlohmann::json(nullptr)},
      {"core_split", core_split_of(run)},
      {"decode", o.synthetic ? nlohmann::json(nullptr) : decode_json(run)},
      {"cpu_seconds", run.loop_cpu_s},
      {"cpu_cores_busy", run.loop_wall_s > 0 ? run.loop_cpu_s / run.loop_wall_s : 0.0},
      {"first_step", run.state.step},
      {"steps", int64_t(records.size())},
      {"planned_steps", run.steps},
      {"interrupted", result.interrupted},
      {"validation", run.val_json},
      {"input", dtype_name(run.bc.input.dtype)},
      {"gaps", run.loop.activity ? gaps_json(result.gaps) : nlohmann::json(nullptr)},
      {"device_memory", device_json(*run.backend)},
      {"conv_algorithms", algorithms_json(*run.backend)},
      {"loss", losses},
      {"lr", lrs},
      {"per_step", per_step_json(run, records)},
      {"checkpoint", o.save},
      {"data_checksums", checksums},
      {"end_state",
       {{"step", end.step}, {"epoch", end.epoch}, {"sampler_position", end.sampler_position}}},
      {"options", nlohmann::json::parse(end.config)}};
  doc.update(timing);
  std::ofstream out(o.json);
  out << context_and_result(
             doc, {"tool", "version", "backend", "arch", "classes", "precision", "conv_algo",
                   "threads", "batch", "global_batch", "world", "collective", "image_size",
                   "synthetic", "data", "reader", "input", "warmup", "options"})
             .dump(2)
      << "\n";
  if (!out) fail("train: cannot write {}", o.json);
}

}  // namespace stoker
