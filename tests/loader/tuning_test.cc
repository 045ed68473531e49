// SPDX-License-Identifier: Apache-2.0
// `--reader auto` (loader/tuning/): the decision rules over measured steps and candidates (when
// a window has seen enough; the fastest, unless one shown level with it asks for fewer cores),
// the candidate list from the host's cores and the order a search tries them in, and the tuner
// driving a real Iterator: every candidate tried or
// skipped by name, a choice, a new search when the image side changes, and the batches
// exactly a fixed reader's throughout.
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "loader/iterator.h"
#include "loader/tuning/reader_tuner.h"
#include "loader/tuning/tuning_candidates.h"
#include "loader/tuning/tuning_choice.h"
#include "loader_test_util.h"
#include "test_util.h"
#include "tools/gen/gen_dataset.h"

namespace stoker {
namespace {

using test::TempDir;

CandidateMeasure measured(const char* reader, double rate, double se, double wait = 0,
                          size_t prefetch = 2) {
  CandidateMeasure m;
  m.candidate = {parse_reader(reader), prefetch};
  m.steps = 10;
  m.steps_per_s = rate;
  m.rate_se = se;
  m.data_wait = wait;
  return m;
}

CandidateMeasure skipped(const char* reader) {
  CandidateMeasure m;
  m.candidate = {parse_reader(reader), 2};
  m.skipped = reader + std::string(": cannot start");
  return m;
}

const TuningRules kRules;  // z 2, level within 3%, precise at 2%, waiting above 2%

// ---- the decision rule ------------------------------------------------------------------

TEST(TuningChoice, TheFastestWinsWhenNoneIsLevel) {
  const std::vector<CandidateMeasure> m = {
      measured("serial", 10, 0.2), measured("threads:2", 20, 0.4), measured("threads:1", 15, 0.3)};
  const TuningChoice c = choose_candidate(m, kRules);
  EXPECT_EQ(c.best, 1u);
  EXPECT_NE(c.why.find("highest rate"), std::string::npos) << c.why;
}

TEST(TuningChoice, ShownLevelTakesFewerCores) {
  // threads:4 is fastest; threads:2 is shown within 3% of it (0.2 + 2 x 0.14 <= 0.6), serial
  // is not (1.0 + 0.28).
  const std::vector<CandidateMeasure> m = {measured("threads:4", 20, 0.1),
                                           measured("threads:2", 19.8, 0.1),
                                           measured("serial", 19.0, 0.1)};
  const TuningChoice c = choose_candidate(m, kRules);
  EXPECT_EQ(c.best, 1u);
  EXPECT_NE(c.why.find("fewer cores (2 against 4)"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("threads:4 prefetch 2"), std::string::npos) << c.why;
}

// The case that made `serial` the choice of a 2-core training run (docs/PERFORMANCE.md): two
// windows too noisy to tell apart are not "level"; the faster by its mean wins.
TEST(TuningChoice, TooNoisyToShowLevelIsNotLevel) {
  const std::vector<CandidateMeasure> m = {measured("threads:2", 20, 1.3),
                                           measured("serial", 19.5, 1.3)};
  EXPECT_EQ(choose_candidate(m, kRules).best, 0u);
}

// The reader a search started from (the default) stays unless another is shown faster: a
// run left threads:2 for processes:2 on 0.5%, inside the noise, and ran 4% slower.
TEST(TuningChoice, TheIncumbentStaysUnlessAnotherIsShownFaster) {
  const std::vector<CandidateMeasure> within = {measured("threads:2", 76.4, 1.53),
                                                measured("processes:2", 76.8, 0.62)};
  const TuningChoice stays = choose_candidate(within, kRules, 0);
  EXPECT_EQ(stays.best, 0u);
  EXPECT_NE(stays.why.find("none was shown faster"), std::string::npos) << stays.why;
  EXPECT_EQ(choose_candidate(within, kRules).best, 1u);  // no incumbent: the faster mean
  const std::vector<CandidateMeasure> shown = {measured("threads:2", 76.4, 1.53),
                                               measured("processes:2", 80, 0.62)};
  EXPECT_EQ(choose_candidate(shown, kRules, 0).best, 1u);  // 3.6 > 2 x 1.65
  // Faster beyond its tiny noise, but by 0.1%: level, not a reason to leave the default.
  const std::vector<CandidateMeasure> tiny = {measured("threads:2", 24.95, 0.01),
                                              measured("processes:2", 24.97, 0.001)};
  EXPECT_EQ(reference_of(tiny, kRules, 0), 0u);
  // Fewer cores level with the incumbent still win.
  const std::vector<CandidateMeasure> fewer = {measured("threads:2", 25, 0.01),
                                               measured("threads:1", 24.9, 0.01),
                                               measured("processes:2", 25.1, 0.3)};
  EXPECT_EQ(choose_candidate(fewer, kRules, 0).best, 1u);
}

TEST(TuningChoice, LevelEndsAtTheTolerance) {
  EXPECT_EQ(
      choose_candidate({measured("threads:2", 20, 0.05), measured("threads:1", 19.5, 0.05)}, kRules)
          .best,
      0u);  // 0.5 + 0.14 > 0.6
  EXPECT_EQ(
      choose_candidate({measured("threads:2", 20, 0.05), measured("threads:1", 19.6, 0.05)}, kRules)
          .best,
      1u);  // 0.4 + 0.14 <= 0.6
}

TEST(TuningChoice, EqualCoresTakeTheFasterThenTheEarlier) {
  const std::vector<CandidateMeasure> a = {measured("threads:2", 20, 0.1),
                                           measured("processes:2", 20.5, 0.1),
                                           measured("uring:16:2", 19.8, 0.1)};
  EXPECT_EQ(choose_candidate(a, kRules).best, 1u);
  const std::vector<CandidateMeasure> b = {measured("threads:2", 20, 0.01),
                                           measured("processes:2", 20, 0.01)};
  EXPECT_EQ(choose_candidate(b, kRules).best, 0u);
}

TEST(TuningChoice, SkippedAndUnmeasuredNeverWin) {
  CandidateMeasure empty = measured("serial", 99, 0);
  empty.steps = 0;
  const std::vector<CandidateMeasure> m = {skipped("processes:1"), empty,
                                           measured("threads:2", 10, 0.1)};
  EXPECT_EQ(choose_candidate(m, kRules).best, 2u);
  const TuningChoice none = choose_candidate({skipped("processes:1"), empty}, kRules);
  EXPECT_EQ(none.best, SIZE_MAX);
  EXPECT_NE(none.why.find("no candidate"), std::string::npos);
}

std::vector<int64_t> steps_ms(std::vector<double> ms) {
  std::vector<int64_t> ns;
  for (double m : ms) ns.push_back(static_cast<int64_t>(m * 1e6));
  return ns;
}

TEST(TuningChoice, StepRateAndItsStandardError) {
  const StepRate steady = step_rate(steps_ms({10, 10, 10, 10}));
  EXPECT_NEAR(steady.steps_per_s, 100, 1e-9);
  EXPECT_NEAR(steady.se, 0, 1e-9);
  // Mean 15 ms: 66.7 steps/s; sd 5.77 ms, its mean's se 2.89 ms, 19.2% of the mean.
  const StepRate mixed = step_rate(steps_ms({10, 20, 10, 20}));
  EXPECT_NEAR(mixed.steps_per_s, 1000.0 / 15, 1e-9);
  EXPECT_NEAR(mixed.se, 1000.0 / 15 * (std::sqrt(100.0 / 3) / 2) / 15, 1e-9);
  const StepRate one = step_rate(steps_ms({10}));
  EXPECT_NEAR(one.se, one.steps_per_s, 1e-9);  // nothing known of its spread
}

TEST(TuningChoice, AWindowEndsWhenItHasSeenEnough) {
  const CandidateMeasure fastest = measured("threads:2", 100, 1);
  auto verdict = [&](std::vector<double> ms, const CandidateMeasure* f = nullptr) {
    return verdict_name(window_verdict(steps_ms(std::move(ms)), f, 4, 24, kRules));
  };
  EXPECT_STREQ(verdict({20, 20, 20}, &fastest), "go_on");  // fewer than the least
  EXPECT_STREQ(verdict({20, 20, 20, 20}, &fastest), "behind");
  EXPECT_STREQ(verdict({10, 10, 10, 10}, &fastest), "level");
  EXPECT_STREQ(verdict({9, 9, 9, 9}, &fastest), "ahead");
  EXPECT_STREQ(verdict({10, 10, 10, 10}), "precise");  // the first candidate
  // 9% behind but noisy: not decided after 6 steps, dropped by 24.
  std::vector<double> noisy;
  for (int i = 0; i < 3; ++i) noisy.insert(noisy.end(), {9, 13});
  EXPECT_STREQ(verdict(noisy, &fastest), "go_on");
  for (int i = 0; i < 9; ++i) noisy.insert(noisy.end(), {9, 13});
  EXPECT_STREQ(verdict(noisy, &fastest), "behind");
  // The first candidate, noisy: measured until the window's most steps.
  std::vector<double> first(24, 10);
  for (size_t i = 0; i < first.size(); i += 2) first[i] = 16;
  EXPECT_STREQ(verdict(first), "full");
}

// ---- the candidates and the order a search tries them in ---------------------------------

std::vector<std::string> texts(const std::vector<TuningCandidate>& c) {
  std::vector<std::string> out;
  for (const TuningCandidate& x : c) out.push_back(x.text());
  return out;
}

TEST(TuningCandidates, FromTheHostsCores) {
  EXPECT_EQ(
      texts(reader_candidates(2, 2)),
      (std::vector<std::string>{"serial prefetch 2", "threads:1 prefetch 2", "threads:2 prefetch 2",
                                "processes:1 prefetch 2", "processes:2 prefetch 2",
                                "uring:8:1 prefetch 2", "uring:16:2 prefetch 2"}));
  const auto six = reader_candidates(6, 3);
  EXPECT_EQ(six.size(), 1u + 3 * 4);  // 1, 2, 4, 6
  EXPECT_EQ(six.back().text(), "uring:48:6 prefetch 3");
  EXPECT_EQ(reader_candidates(0, 2).size(), 4u);
  EXPECT_EQ(texts(prefetch_candidates({parse_reader("threads:2"), 2})),
            (std::vector<std::string>{"threads:2 prefetch 1", "threads:2 prefetch 4"}));
  EXPECT_EQ(texts(prefetch_candidates({parse_reader("threads:2"), 8})),
            (std::vector<std::string>{"threads:2 prefetch 1"}));
  EXPECT_TRUE(prefetch_candidates({parse_reader("serial"), 2}).empty());
}

// Plays a search: each candidate next_candidate() proposes is "measured" by `measure` (its
// rate, error and wait), until it proposes none. Returns the order tried.
template <class Measure>
std::vector<std::string> play(const std::vector<TuningCandidate>& readers, SearchPlan plan,
                              Measure measure) {
  std::vector<CandidateMeasure> tried;
  std::vector<std::string> order;
  while (const auto c = next_candidate(readers, tried, plan, kRules)) {
    CandidateMeasure m = measure(*c);
    m.candidate = *c;
    tried.push_back(m);
    order.push_back(c->text());
    if (order.size() > 40) break;  // a plan that never ends
  }
  return order;
}

// A consumer that never waits: fewer cores while each holds level, then done.
TEST(TuningSearchPlan, StagedGoesDownInCoresWhileNothingWaitsAndItHolds) {
  const auto readers = reader_candidates(16, 2);
  const auto level = play(readers, SearchPlan::staged,
                          [](const TuningCandidate&) { return measured("serial", 10, 0.01); });
  EXPECT_EQ(level, (std::vector<std::string>{"threads:16 prefetch 2", "threads:8 prefetch 2",
                                             "threads:4 prefetch 2", "threads:2 prefetch 2",
                                             "threads:1 prefetch 2", "serial prefetch 2"}));
  // threads:4 is clearly behind: the search stops going down there.
  const auto stops = play(readers, SearchPlan::staged, [](const TuningCandidate& c) {
    return measured("serial", c.cores() >= 8 ? 10 : 8, 0.01);
  });
  EXPECT_EQ(stops, (std::vector<std::string>{"threads:16 prefetch 2", "threads:8 prefetch 2",
                                             "threads:4 prefetch 2"}));
}

// A consumer that waits for data: the other kinds at the best's count, then deeper prefetch
// while it helps and the wait stays.
TEST(TuningSearchPlan, StagedTriesOtherKindsAndDeeperPrefetchWhileTheConsumerWaits) {
  const auto order =
      play(reader_candidates(2, 2), SearchPlan::staged, [](const TuningCandidate& c) {
        if (c.reader.kind == ReaderSpec::Kind::processes)
          return measured("serial", 11 + double(c.prefetch), 0.05, 0.2);
        return measured("serial", 10 + double(c.prefetch), 0.05, 0.3);
      });
  EXPECT_EQ(order, (std::vector<std::string>{"threads:2 prefetch 2", "processes:2 prefetch 2",
                                             "uring:16:2 prefetch 2", "processes:2 prefetch 4",
                                             "processes:2 prefetch 8"}));
}

// A choice that would leave the start is confirmed against the start's latest window: the
// VM's speed drifted 25% within one search (docs/PERFORMANCE.md), so serial, measured after a
// slow first window of threads:2, looked 25% faster; measured again, threads:2 is level.
TEST(TuningSearchPlan, TheIncumbentIsItsLatestMeasure) {
  const auto readers = reader_candidates(2, 2);
  std::vector<CandidateMeasure> tried = {measured("threads:2", 4.09, 0.06),
                                         measured("serial", 5.14, 0.10)};
  EXPECT_EQ(incumbent_of(readers, tried), 0u);
  EXPECT_EQ(choose_candidate(tried, kRules, incumbent_of(readers, tried)).best, 1u);
  tried.push_back(measured("threads:2", 5.3, 0.08));
  EXPECT_EQ(incumbent_of(readers, tried), 2u);
  EXPECT_EQ(choose_candidate(tried, kRules, incumbent_of(readers, tried)).best, 2u);
}

TEST(TuningSearchPlan, AStartThatCannotRunLeavesTheRestInOrder) {
  const auto readers = reader_candidates(2, 2);
  std::vector<CandidateMeasure> tried = {skipped("threads:2")};
  const auto next = next_candidate(readers, tried, SearchPlan::staged, kRules);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->text(), "serial prefetch 2");
}

TEST(TuningSearchPlan, FullTriesEveryReaderThenTheBestsPrefetchDepths) {
  const auto readers = reader_candidates(2, 2);
  const auto order = play(readers, SearchPlan::full, [](const TuningCandidate& c) {
    return measured("serial", c.reader.kind == ReaderSpec::Kind::uring ? 10 + 5 * c.cores() : 10,
                    0.01);
  });
  std::vector<std::string> want = texts(readers);
  want.insert(want.end(), {"uring:16:2 prefetch 1", "uring:16:2 prefetch 4"});
  EXPECT_EQ(order, want);
}

// ---- the tuner over a real iterator -----------------------------------------------------

constexpr int kClasses = 4, kPerClass = 20;  // 80 samples: 20 batches of 4

const std::string& index_set() {
  static TempDir dir;
  static const std::string root =
      test::make_dataset(dir, GenPattern::index, 64, kClasses, kPerClass);
  return root;
}

LoaderConfig config(const std::string& reader) {
  LoaderConfig c;
  c.reader = parse_reader(reader);
  c.sampler.batch_size = 4;
  c.sampler.seed = 5;
  c.transform.size = 32;
  c.warn = false;
  return c;
}

// Epoch checksums of `epochs` epochs, pulled through `next` after `start`; each step holds its
// batch for `hold`.
template <class Start, class Next>
std::vector<uint64_t> checksums(Iterator& it, int epochs, Start start, Next next,
                                std::chrono::microseconds hold = {}) {
  std::vector<uint64_t> out;
  for (int e = 0; e < epochs; ++e) {
    start(static_cast<uint64_t>(e));
    while (next()) std::this_thread::sleep_for(hold);
    out.push_back(it.epoch_checksum());
  }
  return out;
}

std::vector<uint64_t> fixed_checksums(const LoaderConfig& c, int epochs) {
  const Index index = open_index(index_set());
  Iterator it(index, c);
  return checksums(
      it, epochs, [&](uint64_t e) { it.start_epoch(e); }, [&] { return it.next(); });
}

// Windows of exactly `window` steps after `settle`: the tests count steps.
TunerLimits limits(size_t settle, size_t window, SearchPlan plan) {
  TunerLimits l;
  l.settle = settle;
  l.min_window = window;
  l.window = window;
  l.max_seconds = 60;
  l.plan = plan;
  return l;
}

TEST(ReaderTuner, SearchesSkipsByNameChoosesAndKeepsTheBatches) {
  const Index index = open_index(index_set());
  Iterator it(index, config("serial"));
  std::vector<TuningCandidate> readers = {{parse_reader("serial"), 2},
                                          {parse_reader("threads:2"), 2},
                                          {parse_reader("processes:1"), 2}};
  ::setenv("STOKER_WORKER", "/nonexistent/stoker-worker", 1);
  ReaderTuner tuner(it, readers, limits(1, 3, SearchPlan::full));
  int reported = 0;
  tuner.on_search = [&](const TuningSearch&) { ++reported; };
  const auto got = checksums(
      it, 3, [&](uint64_t e) { tuner.start_epoch(e); }, [&] { return tuner.next(); },
      std::chrono::microseconds(500));
  ::unsetenv("STOKER_WORKER");
  EXPECT_EQ(got, fixed_checksums(config("threads:3"), 3));
  ASSERT_EQ(tuner.searches().size(), 1u);
  EXPECT_EQ(reported, 1);
  const TuningSearch& s = tuner.searches()[0];
  EXPECT_EQ(s.reason, "start");
  EXPECT_FALSE(s.cut_short);
  // serial, threads:2, processes:1 (skipped), then threads:2's or serial's prefetch depths.
  ASSERT_GE(s.tried.size(), 3u);
  EXPECT_TRUE(s.tried[0].measured());
  EXPECT_TRUE(s.tried[1].measured());
  EXPECT_NE(s.tried[2].skipped.find("/nonexistent/stoker-worker"), std::string::npos)
      << s.tried[2].skipped;
  ASSERT_NE(s.choice.best, SIZE_MAX);
  EXPECT_EQ(s.chosen.text(), s.tried[s.choice.best].candidate.text());
  EXPECT_EQ(it.reader().text(), s.chosen.reader.text());
  EXPECT_EQ(it.config().prefetch, s.chosen.prefetch);
  for (const CandidateMeasure& m : s.tried) {
    if (!m.measured()) continue;
    EXPECT_EQ(m.steps, 3u);
    EXPECT_GT(m.steps_per_s, 0);
    EXPECT_GE(m.data_wait, 0);
    EXPECT_LE(m.data_wait, 1);
  }
}

TEST(ReaderTuner, ANewSearchWhenTheImageSideChanges) {
  LoaderConfig c = config("serial");
  c.size_schedule = parse_size_schedule("32:64@0-1");  // 32 px in epoch 0, 64 from epoch 1
  const Index index = open_index(index_set());
  Iterator it(index, c);
  ReaderTuner tuner(it, {{parse_reader("serial"), 2}, {parse_reader("threads:2"), 3}},
                    limits(1, 2, SearchPlan::full));
  const auto got = checksums(
      it, 3, [&](uint64_t e) { tuner.start_epoch(e); }, [&] { return tuner.next(); });
  EXPECT_EQ(got, fixed_checksums(c, 3));
  ASSERT_EQ(tuner.searches().size(), 2u);
  EXPECT_EQ(tuner.searches()[1].reason, "image side 32 -> 64");
  EXPECT_EQ(tuner.searches()[1].first_step, 21u);  // the first 64 px step, once done
}

// The consumer slows the data down no more: its steps shrink to the loader's time, the data
// wait rises far above what the chosen reader waited, and a new search starts, after the
// cool-down and a full window.
TEST(ReaderTuner, ANewSearchWhenTheDataWaitRises) {
  const Index index = open_index(index_set());
  Iterator it(index, config("serial"));
  TunerLimits l = limits(1, 3, SearchPlan::staged);
  l.cooldown = 5;
  ReaderTuner tuner(it, {{parse_reader("serial"), 2}}, l);
  size_t steps = 0;
  tuner.start_epoch(0);
  while (tuner.next() != nullptr) {
    // Held 20 ms while the search runs and 5 steps after: the wait is a small share.
    if (++steps <= 4 + 5) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // 20 steps: the first search (4), the cool-down (5), a window (3), the second search (4).
  const std::vector<TuningSearch>& all = tuner.searches();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_LT(all[0].tried.at(0).data_wait, 0.5);
  EXPECT_EQ(all[1].reason.rfind("data wait ", 0), 0u) << all[1].reason;
  EXPECT_NE(all[1].reason.find("above 10%"), std::string::npos) << all[1].reason;
  EXPECT_GT(all[1].tried.at(0).data_wait, all[0].tried.at(0).data_wait + 0.1);
  EXPECT_GE(all[1].first_step, 4u + 5u + 3u);
}

// Cores busy counts processes:N's workers, which the process's own CPU time leaves out until
// they are reaped: the tuner reads them live (Iterator::worker_cpu_seconds).
TEST(ReaderTuner, WorkersCpuTimeIsCounted) {
  TempDir dir;
  const Index index = open_index(test::make_dataset(dir, GenPattern::photo, 384, 2, 40));
  LoaderConfig c = config("processes:2");
  c.transform.size = 224;
  Iterator it(index, c);
  const double before = it.worker_cpu_seconds();
  test::run_epoch(it, 0);
  test::run_epoch(it, 1);
  // 160 decodes of 384 px JPEGs: tens of milliseconds at the least, on the workers alone.
  EXPECT_GT(it.worker_cpu_seconds() - before, 0.02);
  it.switch_reader(parse_reader("threads:2"), 2);
  EXPECT_EQ(it.worker_cpu_seconds(), 0.0);
}

// A pause between steps that is not the loader's (train's checkpoints and validation) is
// left out of the window: the candidate is judged by its steps alone.
TEST(ReaderTuner, NotAStepLeavesAPauseOut) {
  const Index index = open_index(index_set());
  Iterator it(index, config("serial"));
  ReaderTuner tuner(it, {{parse_reader("serial"), 2}}, limits(1, 3, SearchPlan::staged));
  tuner.start_epoch(0);
  for (int step = 0; step < 8 && tuner.next() != nullptr; ++step) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (step == 2) {  // inside the window: a 300 ms checkpoint
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      tuner.not_a_step();
    }
  }
  ASSERT_EQ(tuner.searches().size(), 1u);
  const CandidateMeasure& m = tuner.searches()[0].tried.at(0);
  EXPECT_EQ(m.steps, 3u);
  EXPECT_GT(m.steps_per_s, 40.0) << "the pause counted as a step";  // 5 ms steps: ~190/s
}

TEST(ReaderTuner, BoundedInSteps) {
  const Index index = open_index(index_set());
  Iterator it(index, config("serial"));
  TunerLimits l = limits(1, 3, SearchPlan::full);
  l.max_steps = 10;
  ReaderTuner tuner(it, reader_candidates(2, 2), l);
  checksums(
      it, 2, [&](uint64_t e) { tuner.start_epoch(e); }, [&] { return tuner.next(); });
  ASSERT_EQ(tuner.searches().size(), 1u);
  const TuningSearch& s = tuner.searches()[0];
  EXPECT_TRUE(s.cut_short);
  EXPECT_LE(s.steps, 10u + 4u);  // the bound, and the window it ended in
  EXPECT_LT(s.tried.size(), reader_candidates(2, 2).size());
}

}  // namespace
}  // namespace stoker
