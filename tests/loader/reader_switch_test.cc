// SPDX-License-Identifier: Apache-2.0
// Iterator::switch_reader (what `--reader auto` does while it searches): a reader and a prefetch
// depth changed at batch boundaries, mid-epoch, across every kind, lose or repeat no sample and
// leave each batch's contents, the sample order and the epoch checksum exactly a fixed
// reader's. A reader that cannot start is refused naming it, and the one before runs on.
#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/error.h"
#include "loader/iterator.h"
#include "loader_test_util.h"
#include "test_util.h"
#include "tools/gen/gen_dataset.h"

namespace stoker {
namespace {

using test::TempDir;
using test::uring_works;

constexpr int kClasses = 3, kPerClass = 15;  // 45 samples: 9 batches of 5

const std::string& index_set() {
  static TempDir dir;
  static const std::string root =
      test::make_dataset(dir, GenPattern::index, 64, kClasses, kPerClass);
  return root;
}

LoaderConfig config(const std::string& reader) {
  LoaderConfig c;
  c.reader = parse_reader(reader);
  c.sampler.batch_size = 5;
  c.sampler.seed = 11;
  c.transform.size = 32;
  c.prefetch = 2;
  c.output.dtype = DType::u8;
  c.output.layout = Layout::nhwc;
  c.warn = false;
  return c;
}

// Every kind this build and kernel can run, with their prefetch depths: the switch cycle.
struct Step {
  const char* reader;
  size_t prefetch;
};
std::vector<Step> cycle() {
  std::vector<Step> s = {{"threads:3", 3}, {"processes:2", 2}, {"serial", 1}, {"threads:1", 4}};
  if (uring_works()) s.insert(s.begin() + 2, {"uring:4:2", 2});
  return s;
}

// The dataset index each sample's pixels encode, in delivery order.
std::vector<uint32_t> decoded_order(const test::EpochRecord& r) {
  std::vector<uint32_t> out;
  const size_t sample = 32 * 32 * 3;
  for (const auto& bytes : r.bytes) {
    for (size_t at = 0; at < bytes.size(); at += sample) {
      out.push_back(index_from_colour(bytes.data() + at + (16 * 32 + 16) * 3));
    }
  }
  return out;
}

void expect_same_epoch(const test::EpochRecord& got, const test::EpochRecord& want,
                       const std::string& what) {
  ASSERT_EQ(got.batch_checksums.size(), want.batch_checksums.size()) << what;
  for (size_t b = 0; b < want.batch_checksums.size(); ++b) {
    EXPECT_EQ(got.batch_checksums[b], want.batch_checksums[b]) << what << ", batch " << b;
    EXPECT_TRUE(got.bytes[b] == want.bytes[b]) << what << ", batch " << b;
  }
  EXPECT_EQ(got.epoch_checksum, want.epoch_checksum) << what;
  EXPECT_EQ(decoded_order(got), decoded_order(want)) << what;
}

// A fixed reader's epochs 0 and 1, against which every switching run is held.
const std::vector<test::EpochRecord>& fixed() {
  static const std::vector<test::EpochRecord> r = [] {
    const Index index = open_index(index_set());
    Iterator it(index, config("serial"));
    return std::vector<test::EpochRecord>{test::run_epoch(it, 0), test::run_epoch(it, 1)};
  }();
  return r;
}

TEST(ReaderSwitch, FixedReferenceIsTheSamplersOrder) {
  const Index index = open_index(index_set());
  Iterator it(index, config("serial"));
  it.start_epoch(1);
  std::vector<uint32_t> want;
  for (size_t pos = 0; pos < index.size(); ++pos) want.push_back(it.sampler().at(pos));
  EXPECT_EQ(decoded_order(fixed()[1]), want);
  EXPECT_NE(fixed()[0].epoch_checksum, fixed()[1].epoch_checksum);
}

// A switch after every batch of two epochs, through every kind and several prefetch depths.
TEST(ReaderSwitch, EveryBatchAcrossKindsGivesTheFixedReadersEpochs) {
  const Index index = open_index(index_set());
  Iterator it(index, config("threads:2"));
  const std::vector<Step> steps = cycle();
  size_t k = 0, switches = 0;
  for (uint64_t epoch : {0, 1}) {
    const test::EpochRecord got = test::run_epoch_watching(it, epoch, 0, [&](int) {
      const Step& s = steps[k++ % steps.size()];
      EXPECT_EQ(it.switch_reader(parse_reader(s.reader), s.prefetch).text(), s.reader);
      EXPECT_EQ(it.config().prefetch, s.prefetch);
      ++switches;
    });
    expect_same_epoch(got, fixed()[epoch], "switching every batch, epoch " + std::to_string(epoch));
  }
  EXPECT_GE(switches, 18u);
  EXPECT_EQ(it.position().index, index.size());
}

// Switches at irregular boundaries, before the first batch and once the epoch is done; a
// switch before start_epoch keeps its reader for the epoch that follows.
TEST(ReaderSwitch, IrregularBoundariesAndEpochEdges) {
  const Index index = open_index(index_set());
  Iterator it(index, config("serial"));
  it.switch_reader(parse_reader("processes:2"), 3);  // before any epoch
  const std::vector<Step> steps = cycle();
  size_t k = 0;
  const test::EpochRecord e0 = test::run_epoch_watching(it, 0, 0, [&](int n) {
    if (n == -1 || n == 1 || n == 2 || n == 6 || n == 8) {  // n = 8: the epoch's last batch
      const Step& s = steps[k++ % steps.size()];
      it.switch_reader(parse_reader(s.reader), s.prefetch);
    }
  });
  expect_same_epoch(e0, fixed()[0], "irregular switches");
  EXPECT_EQ(it.next(), nullptr) << "a switch after the last batch starts nothing";
  const test::EpochRecord e1 = test::run_epoch(it, 1);
  expect_same_epoch(e1, fixed()[1], "the epoch after");
}

// Resuming mid-epoch (a checkpoint's position), then switching: the rest of the epoch.
TEST(ReaderSwitch, ResumedMidEpochThenSwitched) {
  const Index index = open_index(index_set());
  Iterator it(index, config("threads:2"));
  const uint64_t start = 3 * 5;  // after batch 3
  size_t k = 0;
  const std::vector<Step> steps = cycle();
  const test::EpochRecord got = test::run_epoch_watching(it, 1, start, [&](int n) {
    if (n % 2 == 0) {
      const Step& s = steps[k++ % steps.size()];
      it.switch_reader(parse_reader(s.reader), s.prefetch);
    }
  });
  const test::EpochRecord& all = fixed()[1];
  ASSERT_EQ(got.batch_checksums.size() + 3, all.batch_checksums.size());
  for (size_t b = 0; b < got.batch_checksums.size(); ++b) {
    EXPECT_EQ(got.batch_checksums[b], all.batch_checksums[b + 3]) << "batch " << b + 3;
    EXPECT_TRUE(got.bytes[b] == all.bytes[b + 3]) << "batch " << b + 3;
  }
}

// A worker process that cannot start: refused naming it, and the reader before runs on with
// nothing lost.
TEST(ReaderSwitch, AReaderThatCannotStartIsRefusedAndTheOldOneRunsOn) {
  const Index index = open_index(index_set());
  Iterator it(index, config("threads:2"));
  std::string error;
  const test::EpochRecord got = test::run_epoch_watching(it, 0, 0, [&](int n) {
    if (n != 2) return;
    ::setenv("STOKER_WORKER", "/nonexistent/stoker-worker", 1);
    try {
      it.switch_reader(parse_reader("processes:2"), 2);
    } catch (const Error& e) {
      error = e.what();
    }
    ::unsetenv("STOKER_WORKER");
    EXPECT_EQ(it.reader().text(), "threads:2");
    EXPECT_EQ(it.config().prefetch, 2u);
  });
  EXPECT_NE(error.find("/nonexistent/stoker-worker"), std::string::npos) << error;
  expect_same_epoch(got, fixed()[0], "after a refused switch");
}

// Replacements of bad files count once per delivered slot, however often a reader switch made
// a batch be prepared again.
TEST(ReaderSwitch, ReplacementsCountOnceAcrossSwitches) {
  TempDir dir;
  const std::string root = test::make_dataset(dir, GenPattern::index, 64, kClasses, kPerClass);
  const Index index = open_index(root);
  for (uint32_t i : {4u, 5u, 20u, 33u}) test::write_text(index.path(i), "not a jpeg");
  auto run = [&](bool switching) {
    Iterator it(index, config("threads:2"));
    const std::vector<Step> steps = cycle();
    size_t k = 0;
    const test::EpochRecord r = test::run_epoch_watching(it, 0, 0, [&](int) {
      if (!switching) return;
      const Step& s = steps[k++ % steps.size()];
      it.switch_reader(parse_reader(s.reader), s.prefetch);
    });
    return std::make_pair(r.epoch_checksum, it.bad_samples().skipped.load());
  };
  const auto want = run(false), got = run(true);
  EXPECT_EQ(got, want);
  EXPECT_GE(want.second, 4u);
}

// Batches the consumer retains (the Python module's zero-copy hand-off) survive switches: each
// old reader is kept, stopped, until its last retained batch is released, and no reader that
// comes after reuses their buffers. Released out of order, after later switches.
TEST(ReaderSwitch, RetainedBatchesSurviveSwitchesUntilReleased) {
  const Index index = open_index(index_set());
  LoaderConfig c = config("threads:2");
  c.keep = 3;
  Iterator it(index, c);
  const std::vector<Step> steps = cycle();
  struct Held {
    const Batch* batch;
    std::vector<uint8_t> bytes;
  };
  std::vector<Held> held;
  it.start_epoch(0);
  size_t b = 0;
  while (const Batch* batch = it.next()) {
    const auto* p = static_cast<const uint8_t*>(batch->data);
    std::vector<uint8_t> bytes(p, p + batch->bytes());
    ASSERT_TRUE(bytes == fixed()[0].bytes[b]) << "batch " << b;
    if (b % 3 == 0) {  // held across the next switches
      it.retain();
      held.push_back({batch, std::move(bytes)});
    }
    if (held.size() == 3) {  // the oldest goes back, two switches after its reader left
      it.release(held.front().batch);
      held.erase(held.begin());
    }
    const Step& s = steps[b++ % steps.size()];
    it.switch_reader(parse_reader(s.reader), s.prefetch);
  }
  EXPECT_EQ(it.epoch_checksum(), fixed()[0].epoch_checksum);
  for (const Held& h : held) {
    const auto* p = static_cast<const uint8_t*>(h.batch->data);
    EXPECT_TRUE(std::vector<uint8_t>(p, p + h.batch->bytes()) == h.bytes) << "overwritten";
    it.release(h.batch);
  }
}

// A switch reuses the last pool's memory (loader/buffer_recycler.h): a pool as large as the
// one before asks the real allocator for nothing more, and every buffer goes back to it once
// the iterator goes.
TEST(ReaderSwitch, ASwitchReusesThePoolsMemory) {
  const Index index = open_index(index_set());
  std::atomic<int> allocated{0}, released{0};
  LoaderConfig c = config("threads:2");
  c.memory.allocate = [&](size_t bytes) {
    ++allocated;
    return std::aligned_alloc(4096, bytes);
  };
  c.memory.release = [&](void* p) {
    ++released;
    std::free(p);
  };
  {
    Iterator it(index, c);
    it.start_epoch(0);
    ASSERT_NE(it.next(), nullptr);
    const int first = allocated.load();
    EXPECT_EQ(first, int(pool_batches(c)));
    it.switch_reader(parse_reader("threads:1"), c.prefetch);  // the same pool size
    ASSERT_NE(it.next(), nullptr);
    it.switch_reader(parse_reader("serial"), c.prefetch);  // a smaller one
    ASSERT_NE(it.next(), nullptr);
    it.switch_reader(parse_reader("threads:2"), c.prefetch);
    ASSERT_NE(it.next(), nullptr);
    EXPECT_EQ(allocated.load(), first) << "a switch allocated its pool again";
    EXPECT_EQ(released.load(), 0);
  }
  EXPECT_EQ(released.load(), allocated.load());
}

}  // namespace
}  // namespace stoker
