// SPDX-License-Identifier: Apache-2.0
// LoaderConfig::poll runs while next() waits and can end the wait. (Iterator::retain/release,
// under every reader and source: reader_suite_test.cc.)
#include <gtest/gtest.h>

#include "common/error.h"
#include "loader/iterator.h"
#include "loader_test_util.h"
#include "test_util.h"
#include "tools/gen/gen_dataset.h"

namespace stoker {
namespace {

using test::make_dataset;
using test::TempDir;

LoaderConfig config_for(const std::string& reader) {
  LoaderConfig c;
  c.reader = parse_reader(reader);
  c.sampler.batch_size = 4;
  c.sampler.seed = 5;
  c.transform.size = 32;
  c.prefetch = 2;
  c.keep = 2;
  c.warn = false;
  return c;
}

// serial polls before each sample, so this is deterministic; the parallel readers' 50 ms
// polling of a blocked wait is tested from Python (tests/python/test_interrupt.py).
TEST(Poll, RunsWhileProducingAndCanEndTheWait) {
  TempDir d;
  const Index index = open_index(make_dataset(d, GenPattern::photo, 64, 2, 8));
  LoaderConfig c = config_for("serial");
  int calls = 0;
  struct Stop {};
  c.poll = [&] {
    if (++calls == 1) throw Stop{};
  };
  Iterator it(index, c);
  it.start_epoch(0);
  // poll's exception ends the first call; the next call gets batch 0 all the same.
  EXPECT_THROW(it.next(), Stop);
  const Batch* b = it.next();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->number, 0u);
  EXPECT_EQ(calls, 1 + 4);  // then once before each sample of batch 0
}

}  // namespace
}  // namespace stoker
