// SPDX-License-Identifier: Apache-2.0
// Iterator::retain/release (the hook zero-copy consumers such as the Python module use): a
// retained batch is never overwritten while later batches come, its buffer is reused once
// released, holding every buffer is an error rather than a wait, and LoaderConfig::poll
// runs while next() waits and can end the wait.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

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

std::vector<char> bytes_of(const Batch& b) {
  const char* p = static_cast<const char*>(b.data);
  return {p, p + b.bytes()};
}

class Retain : public ::testing::TestWithParam<const char*> {};

TEST_P(Retain, RetainedBatchesSurviveAndBuffersComeBack) {
  TempDir d;
  const Index index = open_index(make_dataset(d, GenPattern::photo, 64, 3, 12));  // 9 batches
  const LoaderConfig c = config_for(GetParam());
  Iterator it(index, c);
  it.start_epoch(0);
  const Batch* first = it.next();
  it.retain();
  const std::vector<char> first_bytes = bytes_of(*first);
  const uint64_t first_number = first->number;
  // The other buffers cycle under it for the rest of the epoch.
  size_t n = 1;
  while (const Batch* b = it.next()) {
    EXPECT_NE(b, first);
    ++n;
  }
  EXPECT_EQ(n, 9u);
  EXPECT_EQ(first->number, first_number);
  EXPECT_EQ(bytes_of(*first), first_bytes);
  it.release(first);

  // Hold every buffer: the pool is prefetch + 1 + keep (serial: 1 + keep).
  const size_t pool = std::string(GetParam()) == "serial" ? 1 + c.keep : pool_batches(c);
  it.start_epoch(1);
  std::vector<const Batch*> held;
  for (size_t i = 0; i < pool; ++i) {
    held.push_back(it.next());
    it.retain();
  }
  try {
    it.next();
    ADD_FAILURE() << "next() with every buffer retained did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("held by the consumer"), std::string::npos) << e.what();
  }
  it.release(held.back());
  const Batch* again = it.next();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->number, pool);  // the refused call did not skip a batch
  for (size_t i = 0; i + 1 < held.size(); ++i) it.release(held[i]);
}

INSTANTIATE_TEST_SUITE_P(Readers, Retain,
                         ::testing::Values("serial", "threads:2", "processes:2", "uring:4:2"));

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
