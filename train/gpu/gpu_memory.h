// SPDX-License-Identifier: Apache-2.0
// The backend's memory: owning device and pinned buffers (common/cuda/buffer.h), and the
// HostMemory hook (loader/host_memory.h) that makes a loader collate straight into pinned memory
// (cudaHostAlloc, or cudaHostRegister for memory mapped elsewhere), so H2D copies run
// asynchronously at full bus speed.
#pragma once

#include "common/cuda/buffer.h"
#include "train/backend.h"

namespace stoker::gpu {

// The hook a GPU backend hands the loader: pinned allocations and registration.
HostMemory pinned_host_memory();

}  // namespace stoker::gpu
