// SPDX-License-Identifier: Apache-2.0
// Whether this machine can run the GPU backend, asked of the CUDA runtime only (never the
// driver library directly, so a binary built with CUDA starts where no driver is installed).
#pragma once

#include <string>

namespace stoker::gpu {

// CUDA devices visible to the runtime; 0 (never an exception) without a driver or device.
int cuda_device_count();

// Empty when `device` can be used; otherwise one line saying why, starting "no CUDA device"
// when there is none at all, e.g. "no CUDA device: cudaGetDeviceCount: CUDA driver version is
// insufficient for CUDA runtime version (cudaErrorInsufficientDriver)".
std::string device_unavailable_reason(int device);

}  // namespace stoker::gpu
