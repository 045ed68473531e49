// SPDX-License-Identifier: Apache-2.0
// The derived figures of common/measures.h: each formula on figures whose answer is known,
// the empty window, and the emulated accelerator's account (train/emulated_accelerator.h)
// going through them.
#include <gtest/gtest.h>

#include "common/measures.h"
#include "train/emulated_accelerator.h"

namespace stoker {
namespace {

TEST(Measures, EachFigureIsItsPartOverTheWindow) {
  EXPECT_DOUBLE_EQ(images_per_s(640, 2.0), 320);
  EXPECT_DOUBLE_EQ(data_wait_share(0.5, 2.0), 0.25);
  EXPECT_DOUBLE_EQ(accelerator_utilisation(1.5, 2.0), 0.75);
  EXPECT_DOUBLE_EQ(idle_share(1.6, 2.0), 0.2);
}

TEST(Measures, AnEmptyWindowGivesZeroNotInfinity) {
  for (const double window : {0.0, -1.0}) {
    EXPECT_EQ(images_per_s(64, window), 0);
    EXPECT_EQ(data_wait_share(1, window), 0);
    EXPECT_EQ(accelerator_utilisation(1, window), 0);
    EXPECT_EQ(idle_share(1, window), 0);
  }
}

TEST(Measures, IdleShareIsNeverNegative) {
  // Held a little longer than the window (the window closes at the last release, the held
  // time is summed per batch): no idle time, not a negative one.
  EXPECT_EQ(idle_share(2.001, 2.0), 0);
}

TEST(Measures, StepComputeIsTheBusyTimeElseThePhases) {
  EXPECT_DOUBLE_EQ(step_compute(0.9, 0.3, 0.5, 0.1), 0.9);
  EXPECT_DOUBLE_EQ(step_compute(0, 0.3, 0.5, 0.125), 0.925);
}

TEST(Measures, GapRemainderIsWhatIsLeftAndNeverNegative) {
  EXPECT_DOUBLE_EQ(gap_remainder(1.0, 0.25, 0.125, 0.5), 0.125);
  EXPECT_EQ(gap_remainder(1.0, 0.5, 0.25, 0.5), 0);
}

TEST(Measures, TheWindowOpensAtTheFirstArrivalOnlyWithoutWarmup) {
  EXPECT_EQ(window_open_ns(0, 100, 250), 250);  // the first step's I/O is start-up
  EXPECT_EQ(window_open_ns(3, 100, 250), 100);  // after a warm-up its wait is measured
}

TEST(Measures, NotEnoughDataBelowTheLeastBatchesOrSeconds) {
  EXPECT_EQ(not_enough_data(kMinJudgedBatches, kMinJudgedSeconds, 1), "");
  EXPECT_NE(not_enough_data(kMinJudgedBatches - 1, 10, 1), "");
  EXPECT_NE(not_enough_data(100, kMinJudgedSeconds / 2, 1), "");
  // A deep prefetch needs more batches: 4 x 8 = 32.
  EXPECT_NE(not_enough_data(31, 10, 8), "");
  EXPECT_EQ(not_enough_data(32, 10, 8), "");
  EXPECT_NE(not_enough_data(1, 0.01, 2).find("1 batch over 0.01 s; a verdict needs at least 10"),
            std::string::npos);
}

// The emulated accelerator's AU counts its nominal compute, not the time it held the batches:
// an oversleep of 0.2 s in a 2 s window lowers AU and is not idle time.
TEST(Measures, UtilisationLeavesOversleepOutOfAu) {
  Utilisation u;
  u.compute_ns = 1'500'000'000;
  u.held_ns = 1'700'000'000;
  u.wait_ns = 250'000'000;
  u.window_ns = 2'000'000'000;
  EXPECT_DOUBLE_EQ(u.accelerator_utilisation(), 0.75);
  EXPECT_DOUBLE_EQ(u.idle_share(), 0.15);
  const double oversleep = double(u.held_ns - u.compute_ns) / double(u.window_ns);
  EXPECT_DOUBLE_EQ(u.accelerator_utilisation() + u.idle_share() + oversleep, 1.0);
}

}  // namespace
}  // namespace stoker
