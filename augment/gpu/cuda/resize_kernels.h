// SPDX-License-Identifier: Apache-2.0
// The GPU decode's resize (augment/gpu/resize_job.h's plan) as two kernels: the horizontal
// pass over each window's rows into uint8 rows, then the vertical pass, ToTensor + Normalize
// through the loader's tables, flip and layout, into the output tensor in its dtype. The
// arithmetic is augment/gpu/resize_math.h's, the CPU's (tests/augment/gpu/resize_job_test.cc).
#pragma once

#include <cuda_runtime_api.h>

#include "augment/gpu/resize_job.h"

namespace stoker::gpu {

// jobs, taps, decoded, temp, lut (3 x 256 floats) and dst are device pointers; the plan's
// grid sizes come from `plan` (host).
void launch_resize(const ResizePlan& plan, const ResizeJob* jobs, const int32_t* taps,
                   const uint8_t* decoded, uint8_t* temp, const float* lut, DType dtype,
                   Layout layout, void* dst, cudaStream_t stream);

}  // namespace stoker::gpu
