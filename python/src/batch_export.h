// SPDX-License-Identifier: Apache-2.0
// A batch's image tensor handed to Python without a copy: as a buffer (NumPy, memoryview)
// and as a DLPack capsule (torch.from_dlpack). Both views keep the batch's lease, so its
// pool buffer is reused only once the last array or tensor over it is gone. Shapes only:
// nothing here decides what a batch holds.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "python/src/loader_core.h"

namespace stoker::py {

// [size, 3, h, w] (nchw) or [size, h, w, 3] (nhwc), uint8 or float32, C-contiguous.
pybind11::buffer_info images_buffer(const BatchLease& lease);

// A "dltensor" capsule (DLPack 0.6, CPU) over the images; it owns a reference to `lease`
// until the consumer's deleter runs, or until the capsule dies unconsumed.
pybind11::object images_dlpack(std::shared_ptr<BatchLease> lease);

}  // namespace stoker::py
