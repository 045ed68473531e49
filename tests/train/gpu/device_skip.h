// SPDX-License-Identifier: Apache-2.0
// The GPU tests' one skip: where device 0 cannot run (no device, no driver), the test skips
// through the skip policy as "no-cuda-device", naming the runtime's reason.
#pragma once

#include <string>

#include "tests/skip_policy.h"
#include "train/gpu/device.h"

#define SKIP_WITHOUT_DEVICE()                                            \
  do {                                                                   \
    const std::string why = ::stoker::gpu::device_unavailable_reason(0); \
    if (!why.empty()) STOKER_SKIP_HONEST("no-cuda-device", why);         \
  } while (0)
