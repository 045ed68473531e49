// SPDX-License-Identifier: Apache-2.0
// What a GPU can compute at most, and the check that keeps a rate it cannot reach out of a
// report: the dense peak FLOP/s of known GPUs by the name CUDA gives them (cudaDeviceProp::
// name), per precision, from NVIDIA's datasheets; and a rate whose implied FLOP/s (images/s
// x the model's FLOPs per trained image) exceeds the peak is a measurement error (a host's
// enqueue time taken for the device's, say), never a result. Host only: no CUDA here.
#pragma once

#include <string>
#include <string_view>

#include "train/backend.h"

namespace stoker {

struct DevicePeak {
  double flops = 0;   // FLOP/s
  std::string basis;  // where the figure comes from, for the message
};

// The peak for `precision` on the GPU named `device_name` (a substring match on CUDA's
// name, e.g. "NVIDIA H200", "NVIDIA H100 80GB HBM3"): f16/bf16 and tf32 are the dense
// tensor-core peaks (no sparsity), f32 the FMA peak without tensor cores (a GPU backend
// keeps TF32 off under f32). A name not in the table gets the largest peak of any GPU in it
// for that precision: a bound that holds for every device known here, and says so.
DevicePeak device_peak(std::string_view device_name, Precision precision);

struct RateCheck {
  bool plausible = true;
  double implied_flops = 0;  // images/s x FLOPs per image
  DevicePeak peak;
  std::string message;  // when not plausible: the numbers and a hint
};

// Whether `images_per_s` of a model doing `flop_per_image` per trained image fits under
// `peak`. The FLOP count is the convolutions' and the classifier's alone (models/flops.h),
// a lower bound on the device's work, so a rate above the peak is impossible, whatever the
// efficiency.
RateCheck check_rate(double images_per_s, double flop_per_image, const DevicePeak& peak);

}  // namespace stoker
