// SPDX-License-Identifier: Apache-2.0
// The step loop of the throughput drivers (bench/cuda_step_driver.cc): training
// steps on one batch, staged every step as a loader's would be, collected often enough for the
// backend's ring of pending steps, every result kept. Header-only; the CPU backend's test
// (timed_steps_test.cc) runs it where no GPU is.
#pragma once

#include <cstdint>
#include <vector>

#include "common/error.h"
#include "train/backend.h"
#include "train/sgd.h"

namespace stoker::test {

// `steps` steps of stage -> forward_backward -> update on `batch`, collecting after every
// `collect_every` steps and at the end: one StepResult per step, in order.
inline std::vector<StepResult> run_steps(Backend& b, const HostBatch& batch, int steps,
                                         int collect_every, const SgdConfig& sgd, float lr) {
  STOKER_CHECK(collect_every >= 1 && collect_every <= Backend::kMaxPendingSteps);
  std::vector<StepResult> out;
  out.reserve(size_t(steps));
  const auto take = [&] {
    const std::vector<StepResult> r = b.collect();
    out.insert(out.end(), r.begin(), r.end());
  };
  for (int k = 0; k < steps; ++k) {
    b.stage(batch);
    b.release_input();
    b.forward_backward();
    b.update(sgd, lr);
    if ((k + 1) % collect_every == 0) take();
  }
  take();
  STOKER_CHECK_MSG(out.size() == size_t(steps), "{} results for {} steps", out.size(), steps);
  return out;
}

}  // namespace stoker::test
