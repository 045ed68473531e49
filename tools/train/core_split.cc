// SPDX-License-Identifier: Apache-2.0
#include "tools/train/core_split.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "common/clock.h"
#include "common/error.h"
#include "common/interrupt.h"
#include "common/measures.h"
#include "common/system_info.h"
#include "tools/setup/trainer.h"
#include "tools/train/train_rank.h"
#include "tools/tuning_report.h"
#include "train/backend.h"

namespace stoker {

std::vector<int> split_order(int cpus) {
  std::vector<int> order = {std::max(cpus, 1)};
  const int floor = std::max(1, (cpus + 1) / 2);
  for (int d = 1; cpus - d >= floor; d *= 2) order.push_back(cpus - d);
  return order;
}

std::string split_too_costly(int cpus, int64_t planned, const TunerLimits& limits) {
  const size_t most = split_order(cpus).size() * (limits.settle + limits.window);
  if (double(most) <= kSplitShare * double(planned)) return "";
  return fmt::format(
      "not searched: the run's {} steps are too few to pay for it (up to {} scratch steps, more "
      "than {:.0f}% of them); every core (--threads N sets the split)",
      planned, most, 100 * kSplitShare);
}

std::optional<int> next_split(int cpus, const std::vector<CandidateMeasure>& tried) {
  const std::vector<int> order = split_order(cpus);
  if (tried.size() >= order.size()) return std::nullopt;
  if (!tried.empty()) {
    const CandidateMeasure& last = tried.back();
    if (!last.measured() || last.verdict == WindowVerdict::behind) return std::nullopt;
  }
  return order[tried.size()];
}

TuningSearch search_core_split(int cpus, const SplitProbe& probe, const TunerLimits& limits) {
  TuningSearch s;
  s.reason = "core split";
  const int64_t t0 = now_ns();
  auto seconds = [t0] { return double(now_ns() - t0) * 1e-9; };
  while (const std::optional<int> threads = next_split(cpus, s.tried)) {
    if (!s.tried.empty() && seconds() >= limits.max_seconds) {
      s.cut_short = true;
      break;
    }
    const size_t f = fastest_of(s.tried);
    s.tried.push_back(probe(*threads, f == SIZE_MAX ? nullptr : &s.tried[f]));
    s.steps += s.tried.back().steps;
  }
  s.seconds = seconds();
  // The default (every core) is the incumbent: another split must be clearly faster, or
  // level with fewer threads.
  s.choice = choose_candidate(s.tried, limits.rules, 0);
  s.kept_previous = s.choice.best == SIZE_MAX;
  if (s.kept_previous) {
    s.chosen.compute_threads = split_order(cpus).front();
  } else {
    s.chosen = s.tried[s.choice.best].candidate;
  }
  return s;
}

namespace {

// One candidate's window on scratch (core_split.h): a backend with `threads` compute threads
// from the run's start, a loader from the run's position, the steps timed between the loop's
// per-step calls (agree_stop) and ended by the reader search's window_verdict, or by
// `deadline_ns` once two steps are measured. Settling steps (the first touches, the loader's
// start) are left out.
void measure_split(const TrainRun& run, const TrainCommand& o, const TunerLimits& lim,
                   int64_t deadline_ns, const CandidateMeasure* fastest, CandidateMeasure& m) {
  BackendConfig bc = run.bc;
  bc.threads = m.candidate.compute_threads;
  bc.record_activity = false;
  const std::unique_ptr<Backend> backend = trainer_backend(
      o.train, run.net, bc, run.start ? &*run.start : nullptr, o.init, run.lc.sampler.seed);
  const TrainerFeed data = trainer_feed(
      *run.index, run.lc, *backend,
      Position{uint64_t(run.state.epoch), uint64_t(run.state.sampler_position)}, run.gpu_decode);
  const size_t settle = lim.settle;
  const int64_t steps = int64_t(settle + lim.window + 1);  // the window's verdict ends it first
  LoopConfig loop =
      trainer_loop(o.train, run.state.step, steps,
                   std::max(o.train.total_steps, run.state.step + steps), run.global_batch, 0);
  loop.progress = false;
  std::vector<int64_t> step_ns;
  int64_t last = now_ns(), wall0 = last, wall1 = last;
  double cpu0 = process_cpu_seconds(), cpu1 = cpu0;
  size_t k = 0;
  m.verdict = WindowVerdict::go_on;
  loop.agree_stop = [&](int signal) {
    if (signal != 0) return signal;
    const int64_t t = now_ns();
    if (k >= settle) step_ns.push_back(t - last);
    if (k + 1 == settle) {  // the window opens after the settling steps
      wall0 = t;
      cpu0 = process_cpu_seconds();
    }
    ++k;
    last = wall1 = t;
    cpu1 = process_cpu_seconds();
    m.verdict = window_verdict(step_ns, fastest, lim.min_window, lim.window, lim.rules);
    if (m.verdict == WindowVerdict::go_on && t >= deadline_ns && step_ns.size() >= 2)
      m.verdict = WindowVerdict::full;
    return m.verdict == WindowVerdict::go_on ? 0 : 1;
  };
  const LoopResult r = train_loop(*backend, data.feed(), loop);
  if (interrupt_signal() != 0)
    throw Interrupted(
        "train: interrupted while --reader auto chose the core split (on scratch, "
        "before the first step): nothing was trained");
  if (m.verdict == WindowVerdict::go_on) m.verdict = WindowVerdict::full;
  m.steps = step_ns.size();
  const StepRate rate = step_rate(step_ns);
  m.steps_per_s = rate.steps_per_s;
  m.rate_se = rate.se;
  double wait = 0, total = 0;
  for (size_t i = settle; i < r.records.size(); ++i) {
    wait += r.records[i].wait;
    total += r.records[i].total;
  }
  m.data_wait = data_wait_share(wait, total);
  m.cores_busy = wall1 > wall0 ? (cpu1 - cpu0) / (double(wall1 - wall0) * 1e-9) : 0;
}

CandidateMeasure probe_split(const TrainRun& run, const TrainCommand& o, const TunerLimits& lim,
                             int64_t deadline_ns, int threads, const CandidateMeasure* fastest) {
  CandidateMeasure m;
  m.candidate.reader = run.lc.reader;
  m.candidate.prefetch = run.lc.prefetch;
  m.candidate.compute_threads = threads;
  if (run.rank0)  // a window may take a minute (ResNet-50 on two cores): say what runs
    fmt::print(stderr, "stoker train: --reader auto: measuring {} for the core split\n",
               m.candidate.text());
  try {
    measure_split(run, o, lim, deadline_ns, fastest, m);
  } catch (const Interrupted&) {
    throw;
  } catch (const Error& e) {  // a candidate that cannot run is skipped and named, never fatal
    m = CandidateMeasure{m.candidate};
    m.skipped = e.what();
  }
  return m;
}

}  // namespace

void split_cores(TrainRun& run, TrainCommand& o, const CLI::App& app) {
  const bool given = app.count("--threads") > 0;
  if (run.resumed) {  // the run's split was chosen before its first step: keep it
    if (run.stored_core_split > 0 && !given) {
      run.core_split_threads = run.bc.threads = o.train.threads = run.stored_core_split;
    }
    return;
  }
  // Only a host trainer's threads share the loader's cores; one rank, as mpirun's ranks must
  // agree; --threads is the user's split.
  if (!run.auto_reader || given || backend_caps(o.train.backend).device || run.world.world() > 1)
    return;
  const int cpus = online_cpus();
  if (cpus < 2) return;
  const TunerLimits lim = o.loader.tuner_limits();
  // The run: its schedule (--total-steps), else --steps, else its epochs of the data.
  const int64_t per_epoch = int64_t(run.index->size()) / std::max<int64_t>(run.global_batch, 1);
  const int64_t planned =
      std::max(o.train.total_steps, o.steps > 0 ? o.steps : per_epoch * std::max(1, o.epochs));
  run.core_split_skipped = split_too_costly(cpus, planned, lim);
  if (!run.core_split_skipped.empty()) return;
  const int64_t deadline = now_ns() + int64_t(lim.max_seconds * 1e9);
  run.core_split = search_core_split(
      cpus,
      [&](int threads, const CandidateMeasure* fastest) {
        return probe_split(run, o, lim, deadline, threads, fastest);
      },
      lim);
  run.core_split_threads = run.bc.threads = o.train.threads =
      run.core_split->chosen.compute_threads;
}

}  // namespace stoker
