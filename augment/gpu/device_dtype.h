// SPDX-License-Identifier: Apache-2.0
// The element type of a tensor the GPU decoder writes: the trainer's input dtype (f32 for
// f32 and tf32 training, f16, bf16). Host-side plain data; the kernels map it to CUDA types.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stoker {

enum class DeviceDType : uint8_t { f32, f16, bf16 };

inline size_t device_dtype_bytes(DeviceDType t) {
  return t == DeviceDType::f32 ? 4 : 2;
}

}  // namespace stoker
