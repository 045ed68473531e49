// SPDX-License-Identifier: Apache-2.0
// `--reader auto`'s core split (tools/train/core_split.h): the compute thread counts it may try
// and in which order, where the search stops, and the choice over a probe that returns what a
// window would have measured: the default (every core) stays unless a split is clearly faster
// or level with fewer threads; a split that cannot run is skipped by name, never fatal. The
// end-to-end search on a real trainer is tests/tools/reader_auto_cli_test.sh's.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tools/train/core_split.h"

namespace stoker {
namespace {

TEST(CoreSplit, OrderGoesDownFromEveryCoreToHalf) {
  EXPECT_EQ(split_order(1), (std::vector<int>{1}));
  EXPECT_EQ(split_order(2), (std::vector<int>{2, 1}));
  EXPECT_EQ(split_order(3), (std::vector<int>{3, 2}));
  EXPECT_EQ(split_order(4), (std::vector<int>{4, 3, 2}));
  EXPECT_EQ(split_order(16), (std::vector<int>{16, 15, 14, 12, 8}));
}

// A probe answering from a table of (rate, standard error) per thread count, with the
// verdict a window would give against the fastest so far; a count missing from the table
// cannot run.
struct TableProbe {
  std::map<int, std::pair<double, double>> rates;
  std::vector<int> asked;
  CandidateMeasure operator()(int threads, const CandidateMeasure* fastest) {
    asked.push_back(threads);
    CandidateMeasure m;
    m.candidate.compute_threads = threads;
    const auto it = rates.find(threads);
    if (it == rates.end()) {
      m.skipped = "cannot run with " + std::to_string(threads) + " threads";
      return m;
    }
    m.steps = 8;
    m.steps_per_s = it->second.first;
    m.rate_se = it->second.second;
    m.verdict = WindowVerdict::precise;
    if (fastest != nullptr) {
      const double lead = fastest->steps_per_s - m.steps_per_s;
      const double se = std::hypot(fastest->rate_se, m.rate_se);
      m.verdict = lead > 2 * se ? WindowVerdict::behind : WindowVerdict::level;
    }
    return m;
  }
};

TuningSearch search(int cpus, TableProbe& probe) {
  return search_core_split(
      cpus, [&probe](int t, const CandidateMeasure* f) { return probe(t, f); }, TunerLimits{});
}

TEST(CoreSplit, TheDefaultStaysWhenFewerThreadsAreSlower) {
  TableProbe p{{{4, {10.0, 0.05}}, {3, {8.0, 0.05}}, {2, {6.0, 0.05}}}};
  const TuningSearch s = search(4, p);
  EXPECT_EQ(p.asked, (std::vector<int>{4, 3}));  // 3 is clearly behind: the search stops
  EXPECT_EQ(s.chosen.compute_threads, 4);
  EXPECT_EQ(s.reason, "core split");
  EXPECT_EQ(s.steps, 16u);
  EXPECT_FALSE(s.kept_previous);
}

TEST(CoreSplit, LevelWithFewerThreadsWins) {
  // 3 and 2 threads are shown level with 4 (within 3%): the fewest threads win, and the
  // reason says so.
  TableProbe p{{{4, {10.0, 0.02}}, {3, {10.0, 0.02}}, {2, {9.95, 0.02}}}};
  const TuningSearch s = search(4, p);
  EXPECT_EQ(p.asked, (std::vector<int>{4, 3, 2}));
  EXPECT_EQ(s.chosen.compute_threads, 2);
  EXPECT_NE(s.choice.why.find("fewer cores"), std::string::npos) << s.choice.why;
}

TEST(CoreSplit, ClearlyFasterWithFewerThreadsWins) {
  // The noisy neighbour: the trainer's threads and the loader's fight over the cores, and
  // giving one core to the loader trains faster.
  TableProbe p{{{2, {1.0, 0.01}}, {1, {1.3, 0.01}}}};
  const TuningSearch s = search(2, p);
  EXPECT_EQ(s.chosen.compute_threads, 1);
  EXPECT_NE(s.choice.why.find("highest rate"), std::string::npos) << s.choice.why;
}

TEST(CoreSplit, FasterWithinTheNoiseKeepsTheDefault) {
  TableProbe p{{{2, {1.0, 0.05}}, {1, {1.02, 0.05}}}};
  const TuningSearch s = search(2, p);
  EXPECT_EQ(s.chosen.compute_threads, 2);
  EXPECT_NE(s.choice.why.find("the split it started from"), std::string::npos) << s.choice.why;
}

TEST(CoreSplit, ASplitThatCannotRunIsSkippedAndNamed) {
  TableProbe p{{{4, {10.0, 0.02}}, {2, {12.0, 0.02}}}};  // 3 cannot run
  const TuningSearch s = search(4, p);
  EXPECT_EQ(p.asked, (std::vector<int>{4, 3}));  // a skipped one ends the way down
  ASSERT_EQ(s.tried.size(), 2u);
  EXPECT_NE(s.tried[1].skipped.find("cannot run with 3"), std::string::npos);
  EXPECT_EQ(s.chosen.compute_threads, 4);
}

TEST(CoreSplit, NoneMeasuredKeepsEveryCore) {
  TableProbe p;
  const TuningSearch s = search(2, p);
  EXPECT_TRUE(s.kept_previous);
  EXPECT_EQ(s.chosen.compute_threads, 2);
}

TEST(CoreSplit, ARunTooShortToPayForTheSearchKeepsEveryCore) {
  // Two cores: two candidates of at most 3 settling steps and a window of 24, 54 scratch
  // steps: 5% of a run of 1080.
  const TunerLimits lim;
  EXPECT_EQ(split_too_costly(2, 1080, lim), "");
  const std::string why = split_too_costly(2, 1079, lim);
  EXPECT_NE(why.find("1079 steps are too few"), std::string::npos) << why;
  EXPECT_NE(why.find("up to 54 scratch steps"), std::string::npos) << why;
  EXPECT_EQ(split_too_costly(16, 5 * 27 * 20, lim), "");  // 16, 15, 14, 12, 8
  EXPECT_NE(split_too_costly(16, 5 * 27 * 20 - 1, lim), "");
}

TEST(CoreSplit, NextSplitStopsAtTheFirstClearlyBehind) {
  CandidateMeasure first, behind;
  first.candidate.compute_threads = 4;
  first.steps = 8;
  first.steps_per_s = 10;
  behind = first;
  behind.candidate.compute_threads = 3;
  behind.verdict = WindowVerdict::behind;
  EXPECT_EQ(next_split(4, {}), 4);
  EXPECT_EQ(next_split(4, {first}), 3);
  EXPECT_EQ(next_split(4, {first, behind}), std::nullopt);
  behind.verdict = WindowVerdict::full;  // undecided: not shown behind, so go on down
  EXPECT_EQ(next_split(4, {first, behind}), 2);
}

}  // namespace
}  // namespace stoker
