// SPDX-License-Identifier: Apache-2.0
// The trace window option shared by train --trace-steps and bench --trace-batches: "A:B",
// half-open, with errors that name the option and the text. (The writer's JSON is checked in
// tests/train/train_loop_test.cc, with the loop's trace.)
#include "common/trace_writer.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace stoker {
namespace {

TEST(TraceWindow, ParsesAHalfOpenWindow) {
  const TraceWindow w = parse_trace_window("3:7", "--trace-batches", "batches");
  EXPECT_EQ(w.first, 3);
  EXPECT_EQ(w.last, 7);
  EXPECT_FALSE(w.contains(2));
  EXPECT_TRUE(w.contains(3));
  EXPECT_TRUE(w.contains(6));
  EXPECT_FALSE(w.contains(7));
}

TEST(TraceWindow, RejectsMalformedEmptyAndNegativeWindows) {
  for (const char* bad : {"5", "a:b", "1:2x", "x1:2", ":3", "4:", "5:5", "6:2", "-1:3"}) {
    try {
      parse_trace_window(bad, "--trace-steps", "global steps");
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("--trace-steps '") + bad + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace stoker
