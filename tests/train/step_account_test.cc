// SPDX-License-Identifier: Apache-2.0
// The step accounting (wait + stage + compute + gaps = wall) on hand-made steps whose
// figures are worked out by hand: a device whose timers cover its records, the H200 run's
// two measurement errors (graph steps timed by the host's enqueue, gaps from one stream),
// and the fall-backs without activity records. The CPU backend's own steps are checked in
// train_loop_test (TrainLoop.StepAccountsAddUpOnTheCpu).
#include "train/step_account.h"

#include <gtest/gtest.h>

namespace stoker {
namespace {

// A device step as the H200 graph run's trace shows it (seconds): a 474.6 ms window, 468.1
// ms of kernels, 0.6 ms of it the input conversion; no data wait.
StepRecord device_step() {
  StepRecord r;
  r.total = 0.0006;  // the host's enqueue time of a graph launch
  r.wait = 0.0000004;
  r.window = 0.4746;
  r.busy = 0.4681;
  r.gap = r.window - r.busy;
  r.stage_compute = 0.0006;
  r.forward = 0.1826, r.backward = 0.2849, r.update = 0.0004;  // events, 467.9 ms
  return r;
}

TEST(StepAccount, ADeviceWhoseTimersCoverItsKernelsBalances) {
  const StepAccount a = account_step(device_step(), true, true);
  EXPECT_EQ(a.wall_from, StepAccount::WallFrom::device_records);
  EXPECT_TRUE(a.measured);
  EXPECT_DOUBLE_EQ(a.wall, 0.4746);
  EXPECT_NEAR(a.compute, 0.4679, 1e-12);
  EXPECT_NEAR(a.gaps, 0.0065, 1e-12);
  EXPECT_EQ(a.wait, 0);
  EXPECT_NEAR(a.residual(), -0.0004, 1e-12);  // the timers cover 0.4 ms more than the kernels
  EXPECT_TRUE(a.balanced());
}

TEST(StepAccount, IdleWhileWaitingIsWaitTheRestIsGaps) {
  StepRecord r = device_step();
  r.window = 1.0048;  // the serial 1024 px run: the device idles while the loader reads
  r.gap = r.window - r.busy;
  r.gap_during_wait = 0.5300;
  const StepAccount a = account_step(r, true, true);
  EXPECT_NEAR(a.wait, 0.5300, 1e-12);
  EXPECT_NEAR(a.gaps, r.gap - 0.5300, 1e-12);
  EXPECT_NEAR(a.wait + a.gaps, a.wall - r.busy, 1e-12);
  EXPECT_TRUE(a.balanced());
}

// Graph steps whose whole time was the host's launch (the H200 run's 0.6 ms steps): the
// timers miss the device's work, and the account says so.
TEST(StepAccount, TimersThatMissTheDevicesWorkDoNotBalance) {
  StepRecord r = device_step();
  r.forward = 0.0005, r.backward = 0, r.update = 0;
  const StepAccount a = account_step(r, true, true);
  EXPECT_GT(a.residual(), 0.4);
  EXPECT_FALSE(a.balanced());
}

// Busy time from the compute stream alone (124 ms of the 468 ms: the run's 87% gaps): the
// records' idle time and the timers' busy time overlap, and the account says so.
TEST(StepAccount, GapsFromOneStreamDoNotBalance) {
  StepRecord r = device_step();
  r.busy = 0.0621;
  r.gap = r.window - r.busy;
  const StepAccount a = account_step(r, true, true);
  EXPECT_LT(a.residual(), -0.4);
  EXPECT_FALSE(a.balanced());
}

TEST(StepAccount, WithoutRecordsADeviceUsesItsOwnClockElseSaysItIsTheHosts) {
  StepRecord r = device_step();
  r.engine_wall = 0.4750;
  StepAccount a = account_step(r, true, false);
  EXPECT_EQ(a.wall_from, StepAccount::WallFrom::device_clock);
  EXPECT_FALSE(a.measured);
  EXPECT_DOUBLE_EQ(a.wall, 0.4750);
  EXPECT_NEAR(a.gaps, 0.4750 - 0.0006 - 0.4679, 1e-12);  // what is left: unmeasured
  EXPECT_NEAR(a.residual(), 0, 1e-12);
  r.engine_wall = 0;
  a = account_step(r, true, false);
  EXPECT_EQ(a.wall_from, StepAccount::WallFrom::host_for_device);
  EXPECT_DOUBLE_EQ(a.wall, 0.0006);
  EXPECT_STREQ(wall_from_name(a.wall_from), "host enqueue");
}

TEST(StepAccount, ACpuStepWithoutRecordsIsTheHostsWindow) {
  StepRecord r;
  r.total = 0.100, r.wait = 0.020, r.stage_compute = 0.005;
  r.forward = 0.030, r.backward = 0.040, r.update = 0.004;
  const StepAccount a = account_step(r, false, false);
  EXPECT_EQ(a.wall_from, StepAccount::WallFrom::host);
  EXPECT_DOUBLE_EQ(a.wall, 0.100);
  EXPECT_DOUBLE_EQ(a.wait, 0.020);
  EXPECT_NEAR(a.gaps, 0.001, 1e-12);
  EXPECT_TRUE(a.balanced());
}

TEST(StepAccount, BalancedMeansWithinTwoPercentOfWall) {
  StepAccount a;
  a.wall = 1.0, a.compute = 0.979;
  EXPECT_FALSE(a.balanced());
  a.compute = 0.981;
  EXPECT_TRUE(a.balanced());
  a.compute = 1.019;
  EXPECT_TRUE(a.balanced());
  a.compute = 1.021;
  EXPECT_FALSE(a.balanced());
}

}  // namespace
}  // namespace stoker
