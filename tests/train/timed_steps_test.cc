// SPDX-License-Identifier: Apache-2.0
// The throughput drivers' step loop (bench/timed_steps.h) on the CPU backend: every step
// comes back once, in order, whatever the collection interval (the GPU driver once collected
// inside its step and dropped those results, so its mean times covered only the tail), and the
// synthetic feed lives in the memory the backend asks for.
#include "bench/timed_steps.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "test_util.h"
#include "tests/train/backend_cases.h"
#include "train/train_loop.h"

namespace stoker {
namespace {

TEST(RunSteps, EveryStepOnceWhateverTheCollectionInterval) {
  const auto names = built_backends();
  if (std::find(names.begin(), names.end(), "cpu") == names.end())
    STOKER_SKIP_IF_OPTIONAL(
        "no CPU backend in this build (oneDNN 3; scripts/deps.sh fetches PyPI's onednn-cpu-gomp)");
  const Network net = test::resnet(18, 4);
  BackendConfig c;
  c.batch = 2;
  c.height = c.width = 32;
  std::unique_ptr<Backend> b = make_backend("cpu", net, c);
  b->load(init_checkpoint(net, 3), "init");
  SyntheticFeed feed(2, 32, 32, 4, 9);
  // Three steps collected every two: the driver's old loop kept only the last.
  for (int every : {2, 3}) {
    const std::vector<StepResult> r = test::run_steps(*b, feed.next(), 3, every, {}, 0.01f);
    ASSERT_EQ(r.size(), 3u) << "collect every " << every;
    for (const StepResult& s : r) EXPECT_GT(s.times.forward, 0) << "collect every " << every;
  }
  EXPECT_TRUE(b->collect().empty());
}

TEST(SyntheticFeed, ImagesLiveInTheBackendsMemory) {
  int allocated = 0, released = 0;
  size_t asked = 0;
  HostMemory m;
  m.allocate = [&](size_t bytes) {
    ++allocated;
    asked = bytes;
    return ::operator new(bytes);
  };
  m.release = [&](void* p) {
    ++released;
    ::operator delete(p);
  };
  {
    SyntheticFeed u8(2, 4, 5, 3, 1, DType::u8, m);
    EXPECT_EQ(asked, size_t(2 * 3 * 4 * 5));
    SyntheticFeed f32(2, 4, 5, 3, 1, DType::f32, m);
    EXPECT_EQ(asked, size_t(2 * 3 * 4 * 5) * sizeof(float));
    const HostBatch b = f32.next();
    EXPECT_EQ(b.count, 2);
    for (int i = 0; i < 2; ++i) EXPECT_TRUE(b.labels[i] >= 0 && b.labels[i] < 3);
  }
  EXPECT_EQ(allocated, 2);
  EXPECT_EQ(released, 2);
}

}  // namespace
}  // namespace stoker
