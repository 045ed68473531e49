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
  // The records' busy time less the stage; the events' own compute beside it.
  EXPECT_NEAR(a.compute, 0.4681 - 0.0006, 1e-12);
  EXPECT_NEAR(a.timed_compute, 0.4679, 1e-12);
  EXPECT_NEAR(a.gaps, 0.0065, 1e-12);
  EXPECT_EQ(a.wait, 0);
  EXPECT_NEAR(a.wait + a.stage + a.compute + a.gaps, a.wall, 1e-12);
  // The events span 468.5 ms of the 474.6 ms window: 6.1 ms of it (1.3%) between steps.
  EXPECT_NEAR(a.residual(), 0.4746 - 0.0006 - 0.4679, 1e-12);
  EXPECT_TRUE(a.balanced());
}

// The second H200 run (f16 NHWC, graphs, 16 threads feeding 512 px): 2.3% of the step idle
// between kernels inside the event-timed phases. Counted once: the terms sum to the window,
// and the events span it.
TEST(StepAccount, GapsInsideTheTimedPhasesAreCountedOnce) {
  StepRecord r = device_step();
  r.window = 0.03930, r.gap = 0.00088, r.gap_during_wait = 0.00003;
  r.busy = r.window - r.gap;
  r.stage_compute = 0.00056;
  r.forward = 0.0128, r.backward = 0.0257, r.update = 0.0004;
  const StepAccount a = account_step(r, true, true);
  EXPECT_NEAR(a.wait + a.stage + a.compute + a.gaps, a.wall, 1e-12);
  EXPECT_TRUE(a.balanced()) << a.residual();
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
  EXPECT_NEAR(a.wait + a.stage + a.compute + a.gaps, a.wall, 1e-12);
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

// Timers that count more than the records' window holds (records lost, clocks apart).
TEST(StepAccount, TimersBeyondTheWindowDoNotBalance) {
  StepRecord r = device_step();
  r.backward = 0.3849;  // 100 ms more than the window has room for
  const StepAccount a = account_step(r, true, true);
  EXPECT_LT(a.residual(), -0.05);
  EXPECT_FALSE(a.balanced());
}

// (Busy time from the compute stream alone, the first run's 87% gaps, leaves the events'
// span intact: the account cannot see it; DeviceGapsOnH200's fixtures catch it.)

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

// A size schedule's re-plan (StepRecord::reshape) is the per-size table's cost, not the
// step's: the host window leaves it out, as the loop's activity window does (issue 47).
TEST(StepAccount, ACpuStepsReplanIsLeftOutOfItsWindow) {
  StepRecord r;
  r.total = 0.900, r.reshape = 0.800, r.wait = 0.020, r.stage_compute = 0.005;
  r.forward = 0.030, r.backward = 0.040, r.update = 0.004;
  const StepAccount a = account_step(r, false, false);
  EXPECT_DOUBLE_EQ(a.wall, 0.100);
  EXPECT_NEAR(a.gaps, 0.001, 1e-12);
  EXPECT_TRUE(a.balanced());
}

TEST(StepAccount, BalancedMeansWithinTwoPercentOfWall) {
  StepAccount a;
  a.wall = 1.0, a.timed_compute = 0.979;
  EXPECT_FALSE(a.balanced());
  a.timed_compute = 0.981;
  EXPECT_TRUE(a.balanced());
  a.timed_compute = 1.019;
  EXPECT_TRUE(a.balanced());
  a.timed_compute = 1.021;
  EXPECT_FALSE(a.balanced());
}

}  // namespace
}  // namespace stoker
