// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>

#include "common/dtype.h"

namespace stoker {
namespace {

// Every part sizes its tensors by these (the loader's batch, the backend's staging, the GPU
// decoder's output): a wrong size is a buffer overrun somewhere else.
TEST(DType, BytesAndNameOfEveryType) {
  const struct {
    DType t;
    size_t bytes;
    std::string name;
  } cases[] = {{DType::u8, 1, "u8"},
               {DType::f32, 4, "f32"},
               {DType::f16, 2, "f16"},
               {DType::bf16, 2, "bf16"}};
  for (const auto& c : cases) {
    EXPECT_EQ(dtype_bytes(c.t), c.bytes) << c.name;
    EXPECT_EQ(dtype_name(c.t), c.name);
  }
  EXPECT_STREQ(layout_name(Layout::nchw), "nchw");
  EXPECT_STREQ(layout_name(Layout::nhwc), "nhwc");
}

}  // namespace
}  // namespace stoker
