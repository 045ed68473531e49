// SPDX-License-Identifier: Apache-2.0
// The GPU backend: a CudnnNet (cudnn_net.h) behind the Backend interface, with a copy stream
// that stages batch k+1 while batch k computes, per-step results kept on the device until
// collect(), optional CUDA Graph replay of the whole step, and CUPTI activity records.
// Built only with the CUDA toolkit (STOKER_HAVE_CUDA); links the runtime API, not the driver.
#pragma once

#include <memory>

#include "train/backend.h"
#include "train/gpu/device.h"

namespace stoker::gpu {

// stoker::Error with a one-line reason when no device can run it ("no CUDA device: ...",
// naming the runtime's error, e.g. insufficient driver), or when the config is not one the
// GPU backend plans (names what and why).
std::unique_ptr<Backend> make_cuda_backend(const Network& net, const BackendConfig& config);
// What it can do (Backend::caps): a device, asynchronous, pinned staging, a device input stage.
BackendCaps cuda_caps();

}  // namespace stoker::gpu
