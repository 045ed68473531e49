// SPDX-License-Identifier: Apache-2.0
// An emulated accelerator (the MLPerf Storage / DLIO idea): it "computes" on each batch by
// holding it for a fixed time per image, so a loader and a storage system can be judged
// against a target compute rate without owning the accelerator. Accelerator utilisation
// (AU) = compute time / wall time, the first batch's wait (start-up) excluded.
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

// AU bookkeeping for one run.
struct Utilisation {
  int64_t compute_ns = 0;  // emulated compute, all batches
  int64_t held_ns = 0;     // measured time compute() held them: compute_ns plus oversleep
  int64_t wait_ns = 0;     // time blocked waiting for data, first batch excluded
  int64_t window_ns = 0;   // from the first batch's arrival to the end of the last compute
  double au() const { return window_ns > 0 ? static_cast<double>(compute_ns) / window_ns : 0.0; }
};

}  // namespace stoker
