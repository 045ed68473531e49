// SPDX-License-Identifier: Apache-2.0
// An emulated accelerator (the MLPerf Storage / DLIO idea): it "computes" on each batch by
// holding it for a fixed time per image, so a loader and a storage system can be judged
// against a target compute rate without owning the accelerator. Accelerator utilisation
// (AU) and the idle share: Utilisation below.
#pragma once

#include <cstdint>
#include <string>

namespace stoker {

struct EmulatedAccelerator {
  double seconds_per_image = 0;
  std::string spec;  // as given: a preset name, "IMG/s", or "TIME/N" (e.g. 224ms/400)

  bool enabled() const { return seconds_per_image > 0; }
  double images_per_s() const { return seconds_per_image > 0 ? 1.0 / seconds_per_image : 0; }
  int64_t compute_ns(size_t images) const {
    return static_cast<int64_t>(seconds_per_image * 1e9 * static_cast<double>(images));
  }
  // Holds the batch for compute_ns(images): sleeps, then spins the last 200 us for accuracy.
  void compute(size_t images) const;
};

// "resnet50-h100" (MLPerf Storage's ResNet-50 workload: 400 images in 0.224 s), "N" or
// "Nimg/s" (images per second), or "T/N" with T in s, ms or us (time per N images).
// Throws stoker::Error naming the valid forms.
EmulatedAccelerator parse_emulation(const std::string& spec);

// The accelerator's account over a run's window (tools/bench/emulated_consumer.h: from the end of
// the warm-up, or the first batch's arrival, to the end of the last compute).
struct Utilisation {
  int64_t compute_ns = 0;  // emulated compute of the window's batches
  int64_t held_ns = 0;     // measured time compute() held them: compute_ns plus oversleep
  int64_t wait_ns = 0;     // time blocked waiting for data inside the window
  int64_t window_ns = 0;
  // AU: the emulated compute's share of the window (MLPerf Storage's accelerator
  // utilisation); a loaded host's oversleep lowers it.
  double au() const { return window_ns > 0 ? static_cast<double>(compute_ns) / window_ns : 0.0; }
  // The accelerator's idle share, the one definition bench and study report: the share of
  // the window in which it held no batch, 1 - held / window: its waits for data and the
  // consumer's own bookkeeping. Oversleep is time it held a batch, so it is not idle:
  // au() + idle_share() + oversleep / window = 1.
  double idle_share() const {
    if (window_ns <= 0) return 0.0;
    const double held = static_cast<double>(held_ns) / static_cast<double>(window_ns);
    return held < 1.0 ? 1.0 - held : 0.0;
  }
};

}  // namespace stoker
