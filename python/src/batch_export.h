// SPDX-License-Identifier: Apache-2.0
// A batch's image tensor handed to Python without a copy: as a buffer (NumPy, memoryview)
// and as a DLPack capsule (torch.from_dlpack). Both views keep the batch's lease, so its
// pool buffer is reused only once the last array or tensor over it is gone. Shapes only:
// nothing here decides what a batch holds.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "python/src/loader_core.h"

namespace stoker::py {

// [size, 3, h, w] (nchw) or [size, h, w, 3] (nhwc), uint8 or float32, C-contiguous.
pybind11::buffer_info images_buffer(const BatchLease& lease);

// A batch's labels or dataset indices, copied (a few bytes per sample) as int64, what
// PyTorch's cross-entropy wants. They reach Python through the buffer protocol, as the images
// do, never through pybind11's NumPy API: pybind11 before 2.12 (Debian 12 has 2.10) reads
// NumPy 2's dtype with NumPy 1's layout and gave such arrays a stride of 0, every label the
// batch's last (issue 47). The buffer protocol involves no NumPy struct at all.
struct Int64s {
  std::vector<int64_t> values;
};

// [n] int64 ("q"), C-contiguous, read-only; the consumer's view keeps `v` alive.
pybind11::buffer_info int64s_buffer(const Int64s& v);

// A "dltensor" capsule (DLPack 0.6, CPU) over the images; it owns a reference to `lease`
// until the consumer's deleter runs, or until the capsule dies unconsumed.
pybind11::object images_dlpack(std::shared_ptr<BatchLease> lease);

}  // namespace stoker::py
