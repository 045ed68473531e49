// SPDX-License-Identifier: Apache-2.0
// The element type and the layout of an image tensor, one vocabulary for every part: the
// loader's batch (u8 or f32, augment/collate.h), the backend's input (train/backend.h), the
// GPU decoder's output and the GPU backend's compute tensors (f32, f16, bf16). Not the
// checkpoint file's dtypes (train/safetensors.h's TensorDType: the format's own list).
#pragma once

#include <cstddef>
#include <cstdint>

namespace stoker {

enum class DType : uint8_t { u8, f32, f16, bf16 };
size_t dtype_bytes(DType t);      // 1, 4, 2, 2
const char* dtype_name(DType t);  // "u8", "f32", "f16", "bf16"

// [n, 3, h, w] or [n, h, w, 3].
enum class Layout : uint8_t { nchw, nhwc };
const char* layout_name(Layout l);  // "nchw", "nhwc"

}  // namespace stoker
