// SPDX-License-Identifier: Apache-2.0
#include "common/dtype.h"

namespace stoker {

size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::u8:
      return 1;
    case DType::f32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::u8:
      return "u8";
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
  }
  return "?";
}

const char* layout_name(Layout l) {
  return l == Layout::nchw ? "nchw" : "nhwc";
}

}  // namespace stoker
