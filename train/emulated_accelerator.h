// SPDX-License-Identifier: Apache-2.0
// An emulated accelerator (the MLPerf Storage / DLIO idea): it "computes" on each batch by
// holding it for a fixed time per image, so a loader and a storage system can be judged
// against a target compute rate without owning the accelerator. Its account over a window:
// Utilisation below; AU and the idle share are common/measures.h's.
#pragma once

#include <cstdint>
#include <string>

#include "common/measures.h"

namespace stoker {

struct EmulatedAccelerator {
  double seconds_per_image = 0;
  std::string spec;  // as given: a preset name, "IMG/s", or "TIME/N" (e.g. 224ms/400)

  bool enabled() const { return seconds_per_image > 0; }
  // Its nominal rate: one image per seconds_per_image (0 when not enabled).
  double images_per_s() const { return stoker::images_per_s(1.0, seconds_per_image); }
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

// The accelerator's account over a run's window (tools/bench/emulated_consumer.h: from the
// first timed batch, or with no warm-up its arrival, to the end of the last compute). Its
// figures are common/measures.h's, defined there once.
struct Utilisation {
  int64_t compute_ns = 0;  // emulated compute of the window's batches
  int64_t held_ns = 0;     // measured time compute() held them: compute_ns plus oversleep
  int64_t wait_ns = 0;     // time blocked waiting for data inside the window
  int64_t window_ns = 0;
  // AU: the nominal compute's share of the window; a loaded host's oversleep lowers it.
  double accelerator_utilisation() const {
    return stoker::accelerator_utilisation(1e-9 * double(compute_ns), window_s());
  }
  // The share of the window in which the accelerator held no batch: oversleep is not idle.
  double idle_share() const { return stoker::idle_share(1e-9 * double(held_ns), window_s()); }
  double window_s() const { return 1e-9 * double(window_ns); }
};

}  // namespace stoker
