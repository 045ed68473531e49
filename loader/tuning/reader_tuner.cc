// SPDX-License-Identifier: Apache-2.0
#include "loader/tuning/reader_tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "common/clock.h"
#include "common/error.h"
#include "common/system_info.h"

namespace stoker {

namespace {

double share(const std::vector<int64_t>& part, const std::vector<int64_t>& whole) {
  const double w = static_cast<double>(std::accumulate(whole.begin(), whole.end(), int64_t{0}));
  return w > 0 ? static_cast<double>(std::accumulate(part.begin(), part.end(), int64_t{0})) / w : 0;
}

}  // namespace

ReaderTuner::ReaderTuner(Iterator& it, std::vector<TuningCandidate> readers, TunerLimits limits)
    : it_(it), readers_(std::move(readers)), limits_(limits) {
  begin_search("start");
}

double ReaderTuner::cpu_seconds() const {
  return process_cpu_seconds() + it_.worker_cpu_seconds();
}

std::vector<TuningSearch> ReaderTuner::report() const {
  std::vector<TuningSearch> out = done_;
  if (searching_) {
    TuningSearch s = cur_;
    s.finished = false;
    s.chosen = {it_.reader(), it_.config().prefetch};
    s.choice.why = "the run ended before the search did";
    s.steps = steps_ - s.first_step;
    s.seconds = static_cast<double>(now_ns() - search_start_ns_) * 1e-9;
    out.push_back(std::move(s));
  }
  return out;
}

const Batch* ReaderTuner::next() {
  const int64_t asked = now_ns();
  // The consumer is done with the batch before: a step ends here, and a switch may follow.
  if (last_ask_ns_ != 0) step_done(asked - last_ask_ns_, last_wait_ns_, last_side_);
  const Batch* b = it_.next();
  if (b == nullptr) {
    last_ask_ns_ = 0;  // the epoch's end: the interval to the next epoch is no step
    return b;
  }
  last_ask_ns_ = asked;
  last_wait_ns_ = now_ns() - asked;
  last_side_ = b->spec.width;
  return b;
}

void ReaderTuner::start_epoch(uint64_t epoch, uint64_t start) {
  if (last_ask_ns_ != 0) step_done(now_ns() - last_ask_ns_, last_wait_ns_, last_side_);
  last_ask_ns_ = 0;
  it_.start_epoch(epoch, start);
}

void ReaderTuner::step_done(int64_t step_ns, int64_t wait_ns, int side) {
  ++steps_;
  if (search_side_ == 0) search_side_ = side;
  if (side != 0 && side != search_side_) {
    // Candidates measured at another image size say nothing of this one.
    begin_search(fmt::format("image side {} -> {}", search_side_, side));
    return;
  }
  if (searching_) {
    measure(step_ns, wait_ns);
  } else {
    watch(step_ns, wait_ns);
  }
}

void ReaderTuner::begin_search(std::string reason) {
  if (searching_) {
    cur_.reason += "; restarted: " + reason;  // what it measured is of another size
  } else {
    cur_ = TuningSearch{};
    cur_.reason = std::move(reason);
    cur_.first_step = steps_;
  }
  cur_.tried.clear();
  search_start_ns_ = now_ns();
  search_side_ = last_side_;
  searching_ = true;
  confirming_ = false;
  start_next_candidate();
}

void ReaderTuner::measure(int64_t step_ns, int64_t wait_ns) {
  ++in_candidate_;
  if (in_candidate_ <= limits_.settle) {
    if (in_candidate_ == limits_.settle) {  // the window opens here
      cpu_mark_ = cpu_seconds();
      window_start_ns_ = now_ns();
    }
    return;
  }
  step_ns_.push_back(step_ns);
  wait_ns_.push_back(wait_ns);
  const size_t fastest = fastest_of(cur_.tried);
  const WindowVerdict v =
      window_verdict(step_ns_, fastest == SIZE_MAX ? nullptr : &cur_.tried[fastest],
                     limits_.min_window, limits_.window, limits_.rules);
  if (v == WindowVerdict::go_on) return;
  close_window(v);
  start_next_candidate();
}

void ReaderTuner::close_window(WindowVerdict verdict) {
  CandidateMeasure m;
  m.candidate = current_;
  m.verdict = verdict;
  m.steps = step_ns_.size();
  const StepRate r = step_rate(step_ns_);
  m.steps_per_s = r.steps_per_s;
  m.rate_se = r.se;
  m.data_wait = share(wait_ns_, step_ns_);
  const double wall = static_cast<double>(now_ns() - window_start_ns_) * 1e-9;
  m.cores_busy = wall > 0 ? (cpu_seconds() - cpu_mark_) / wall : 0;
  cur_.tried.push_back(m);
}

void ReaderTuner::start_next_candidate() {
  while (true) {
    std::optional<TuningCandidate> c;
    if (!confirming_) c = next_candidate(readers_, cur_.tried, limits_.plan, limits_.rules);
    const bool over =
        steps_ - cur_.first_step >= limits_.max_steps ||
        static_cast<double>(now_ns() - search_start_ns_) * 1e-9 >= limits_.max_seconds;
    if (!c && !over && !confirming_) c = confirmation();
    if (!c || over) {
      cur_.cut_short = c.has_value();
      finish_search();
      return;
    }
    try {
      if (it_.reader().text() != c->reader.text() || it_.config().prefetch != c->prefetch)
        it_.switch_reader(c->reader, c->prefetch);
    } catch (const Error& e) {
      CandidateMeasure skipped;
      skipped.candidate = *c;
      skipped.skipped = e.what();
      cur_.tried.push_back(skipped);
      continue;
    }
    current_ = *c;
    in_candidate_ = 0;
    step_ns_.clear();
    wait_ns_.clear();
    cpu_mark_ = cpu_seconds();
    window_start_ns_ = now_ns();
    return;
  }
}

std::optional<TuningCandidate> ReaderTuner::confirmation() {
  // Only a challenger shown faster than the incumbent is confirmed: one level with it and
  // asking fewer cores costs at most the tolerance if drift made it look level.
  const size_t inc = incumbent_of(readers_, cur_.tried);
  const size_t ref = reference_of(cur_.tried, limits_.rules, inc);
  if (inc == SIZE_MAX || ref == SIZE_MAX ||
      cur_.tried[ref].candidate.text() == cur_.tried[inc].candidate.text())
    return std::nullopt;
  confirming_ = true;
  return cur_.tried[inc].candidate;
}

void ReaderTuner::finish_search() {
  cur_.choice = choose_candidate(cur_.tried, limits_.rules, incumbent_of(readers_, cur_.tried));
  cur_.kept_previous = cur_.choice.best == SIZE_MAX;
  chosen_wait_ = 0;
  if (!cur_.kept_previous) {
    const CandidateMeasure& best = cur_.tried[cur_.choice.best];
    chosen_wait_ = best.data_wait;
    try {
      if (it_.reader().text() != best.candidate.reader.text() ||
          it_.config().prefetch != best.candidate.prefetch)
        it_.switch_reader(best.candidate.reader, best.candidate.prefetch);
    } catch (const Error& e) {
      cur_.kept_previous = true;
      cur_.choice.why += fmt::format("; it could not start again ({})", e.what());
    }
  }
  cur_.chosen = {it_.reader(), it_.config().prefetch};
  if (cur_.kept_previous) cur_.choice.why += fmt::format("; {} runs on", cur_.chosen.text());
  cur_.steps = steps_ - cur_.first_step;
  cur_.seconds = static_cast<double>(now_ns() - search_start_ns_) * 1e-9;
  searching_ = false;
  watch_since_ = steps_;
  watch_step_.clear();
  watch_wait_.clear();
  done_.push_back(cur_);
  if (on_search) on_search(done_.back());
}

void ReaderTuner::watch(int64_t step_ns, int64_t wait_ns) {
  watch_step_.push_back(step_ns);
  watch_wait_.push_back(wait_ns);
  if (watch_step_.size() > limits_.window) {
    watch_step_.erase(watch_step_.begin());
    watch_wait_.erase(watch_wait_.begin());
  }
  if (steps_ - watch_since_ < limits_.cooldown || watch_step_.size() < limits_.window) return;
  const double wait = share(watch_wait_, watch_step_);
  // Above the threshold, and above what the chosen candidate itself waited by as much: a
  // loader that cannot keep up with any reader does not search again and again.
  if (wait > limits_.wait_threshold && wait > chosen_wait_ + limits_.wait_threshold) {
    begin_search(fmt::format("data wait {:.0f}% over the last {} steps, above {:.0f}%", 100 * wait,
                             watch_step_.size(), 100 * limits_.wait_threshold));
  }
}

}  // namespace stoker
