// SPDX-License-Identifier: Apache-2.0
// One conformance suite for every (reader, source) pair this build has (its tables and
// fixture: reader_suite.h): the same epoch checksum as `serial` on clean data and on a
// heavily corrupted set (and the same bad-file list and replacement count, run after run),
// the bad-file policy, exact resume mid-epoch, and reader failures reaching next(). A pair the
// reader cannot use (a reader that needs an asynchronous source, over a synchronous one) is refused
// naming both instead. Order and labels (images that encode their index), the memory hook and
// retain/release are suite tests too; so is the bad-input matrix (reader_suite_bad_input_test.cc).
// Reader-specific behaviour (worker crashes, O_DIRECT, pinning) stays in its own test file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "reader_suite.h"

namespace stoker {
namespace {

using namespace suite;

// Sources of files are held to serial over pread on the original tree, pixel for pixel: a
// packed (shards rows, in global order) or served (nfs rows) copy must decode as the tree.
TEST_P(ReaderSuite, CleanDataGivesSerialsChecksums) {
  std::string root;
  if (!prepare(clean_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  const Outcome& want =
      source().reads_files ? reference(clean_set(), SourceOptions::Kind::pread) : this->want();
  if (reader().rfind("uring", 0) == 0 && uring_works()) {  // a threads:T fallback passes too
    EXPECT_EQ(Iterator(index, config(reader(), source().kind)).reader().text(), reader());
  }
  const Outcome got = run(index, config(reader(), source().kind));
  EXPECT_EQ(got.checksums, want.checksums);
  EXPECT_NE(got.checksums.at(0), got.checksums.at(1)) << "two epochs, two orders";
  EXPECT_TRUE(got.bad.empty());
  EXPECT_EQ(got.replacements, 0u);
  if (!source().reads_files) return;
  const Index tree_index = open_index(clean_set());
  Iterator tree(tree_index, config("serial", SourceOptions::Kind::pread));
  Iterator it(index, config(reader(), source().kind));
  EXPECT_TRUE(test::run_epoch(it, 0).bytes == test::run_epoch(tree, 0).bytes)
      << "pixels differ from the tree's";
}

// The sampler's order and the labels, sample by sample, from images that encode their index
// (the local copy of every source of files keeps the tree's order), shuffled or not.
TEST_P(ReaderSuite, OrderAndLabelsFromImagesThatEncodeTheirIndex) {
  if (!source().reads_files)
    STOKER_SKIP_HONEST("not-applicable", "the null source serves one fixed image");
  std::string root;
  if (!prepare(index_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  for (bool shuffle : {false, true}) {
    LoaderConfig c = config(reader(), source().kind);
    c.sampler.batch_size = 5;
    c.sampler.seed = 17;
    c.sampler.shuffle = shuffle;
    c.transform.size = 48;
    c.prefetch = 3;
    c.output.dtype = DType::u8;
    c.output.layout = Layout::nhwc;
    Iterator it(index, c);
    it.start_epoch(2);
    size_t pos = 0;
    while (const Batch* b = it.next()) {
      for (size_t i = 0; i < b->size; ++i, ++pos) {
        const uint32_t expected = it.sampler().at(pos);
        const auto* px = static_cast<const uint8_t*>(b->sample(i)) + (24 * 48 + 24) * 3;
        ASSERT_EQ(index_from_colour(px), expected) << "shuffle " << shuffle << " pos " << pos;
        ASSERT_EQ(b->indices[i], expected);
        ASSERT_EQ(b->labels[i], static_cast<int32_t>(expected / kIndexPerClass));
      }
    }
    EXPECT_EQ(pos, static_cast<size_t>(kIndexClasses * kIndexPerClass));
    EXPECT_EQ(it.position().index, pos);
  }
}

// The loader's memory hook (loader/host_memory.h): every batch tensor comes from `allocate`
// and goes back through `release`; processes:N pins its one shared pool instead. Counting
// hooks over real heap memory, and the batches stay serial's.
struct CountingMemory {
  std::map<void*, size_t> live;
  int allocations = 0, releases = 0, pins = 0, unpins = 0;
  size_t pinned_bytes = 0;
  HostMemory hook() {
    HostMemory m;
    m.allocate = [this](size_t bytes) {
      void* p = std::aligned_alloc(4096, bytes);
      live[p] = bytes;
      ++allocations;
      return p;
    };
    m.release = [this](void* p) {
      EXPECT_EQ(live.erase(p), 1u);
      std::free(p);
      ++releases;
    };
    m.pin = [this](void*, size_t bytes) {
      ++pins;
      pinned_bytes = bytes;
    };
    m.unpin = [this](void*) { ++unpins; };
    return m;
  }
};

TEST_P(ReaderSuite, EveryReaderUsesTheMemoryHookAndTheBatchesStayTheSame) {
  std::string root;
  if (!prepare(clean_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  CountingMemory count;
  {
    LoaderConfig c = config(reader(), source().kind);
    c.memory = count.hook();
    Iterator it(index, c);
    EXPECT_EQ(test::run_epoch(it, 0).epoch_checksum, want().checksums.at(0));
  }
  if (reader().starts_with("processes")) {
    EXPECT_EQ(count.allocations, 0);  // one shared pool, pinned instead
    EXPECT_EQ(count.pins, 1);
    EXPECT_GE(count.pinned_bytes, 8u * 3 * 32 * 32 * 4);
    EXPECT_EQ(count.unpins, 1);
  } else {
    EXPECT_GT(count.allocations, 0);
    EXPECT_EQ(count.releases, count.allocations);
    EXPECT_TRUE(count.live.empty());
  }
}

// Iterator::retain/release (the hook zero-copy consumers such as the Python module use): a
// retained batch is never overwritten while later batches come, its buffer is reused once
// released, and holding every buffer is an error rather than a wait.
std::vector<char> bytes_of(const Batch& b) {
  const char* p = static_cast<const char*>(b.data);
  return {p, p + b.bytes()};
}

TEST_P(ReaderSuite, RetainedBatchesSurviveAndBuffersComeBack) {
  std::string root;
  if (!prepare(clean_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  LoaderConfig c = config(reader(), source().kind);
  c.sampler.batch_size = 4;
  c.keep = 2;
  Iterator it(index, c);
  ASSERT_EQ(it.batches_per_epoch(), 10u);  // 39 images
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
  EXPECT_EQ(n, 10u);
  EXPECT_EQ(first->number, first_number);
  EXPECT_EQ(bytes_of(*first), first_bytes);
  it.release(first);

  // Hold every buffer: the pool is prefetch + 1 + keep (serial: 1 + keep).
  const size_t pool = reader() == "serial" ? 1 + c.keep : pool_batches(c);
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

TEST_P(ReaderSuite, CorruptedDataIsDeterministicAndEqualsSerial) {
  if (!source().reads_files)
    STOKER_SKIP_HONEST("not-applicable", "the null source serves fixed bytes: nothing is bad");
  const Corrupted& set = corrupted_set();
  if (set.root.empty()) STOKER_SKIP_IF_OPTIONAL("no photographs (Debian: opencv-doc)");
  std::string root;
  if (!prepare(set.root, root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  ASSERT_EQ(index.size(), 120u);
  const Outcome& want = this->want();
  // The set must really be hard: many bad files, replacement chains longer than one.
  EXPECT_GE(want.bad.size(), 20u);
  EXPECT_LE(want.bad.size(), set.damaged);
  EXPECT_GT(want.replacements, want.bad.size());
  for (int repeat = 0; repeat < 3; ++repeat) {
    const Outcome got = run(index, config(reader(), source().kind));
    ASSERT_EQ(got.checksums, want.checksums) << "run " << repeat;
    ASSERT_EQ(got.replacements, want.replacements) << "run " << repeat;
    ASSERT_EQ(got.bad, want.bad) << "run " << repeat;
  }
}

TEST_P(ReaderSuite, FailPolicyStopsNamingABadFile) {
  if (!source().reads_files)
    STOKER_SKIP_HONEST("not-applicable", "the null source serves fixed bytes: nothing is bad");
  const Corrupted& set = corrupted_set();
  if (set.root.empty()) STOKER_SKIP_IF_OPTIONAL("no photographs (Debian: opencv-doc)");
  std::string root;
  if (!prepare(set.root, root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  const Outcome& want = this->want();
  LoaderConfig c = config(reader(), source().kind);
  c.on_error = ErrorPolicy::fail;
  Iterator it(index, c);
  it.start_epoch(0);
  try {
    while (it.next()) {
    }
    FAIL() << "an epoch over damaged files ended without an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    const bool names_one = std::any_of(want.bad.begin(), want.bad.end(), [&](const auto& b) {
      return msg.find(std::get<1>(b)) != std::string::npos;
    });
    EXPECT_TRUE(names_one) << msg;
  }
}

TEST_P(ReaderSuite, ResumeMidEpochGivesExactlyTheRemainingBatches) {
  std::string root;
  if (!prepare(clean_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  const LoaderConfig c = config(reader(), source().kind);
  Iterator whole(index, c);
  const test::EpochRecord all = test::run_epoch(whole, 1);
  expect_resume_after_two_batches(index, c, all);
}

// A run stopped at the end of an epoch (a checkpoint taken there, with the short last batch
// consumed) resumes from the position it saved: nothing is left of that epoch, and the next
// one is bit for bit the uninterrupted run's. Then a stop inside epoch 0, too.
TEST_P(ReaderSuite, ResumeAtAnEpochBoundaryGivesExactlyTheNextEpoch) {
  std::string root;
  if (!prepare(clean_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  const LoaderConfig c = config(reader(), source().kind);
  Iterator whole(index, c);
  const test::EpochRecord all0 = test::run_epoch(whole, 0);
  const test::EpochRecord all1 = test::run_epoch(whole, 1);
  ASSERT_NE(index.size() % c.sampler.batch_size, 0u) << "the set must end in a short batch";

  Iterator first(index, c);
  test::run_epoch(first, 0);
  const Position end = first.position();
  EXPECT_EQ(end.epoch, 0u);
  EXPECT_EQ(end.index, index.size());
  Iterator resumed(index, c);
  const test::EpochRecord rest = test::run_epoch(resumed, end.epoch, end.index);
  EXPECT_TRUE(rest.batch_checksums.empty()) << rest.batch_checksums.size() << " batches left";
  const test::EpochRecord next = test::run_epoch(resumed, end.epoch + 1);
  EXPECT_EQ(next.batch_checksums, all1.batch_checksums);
  EXPECT_TRUE(next.bytes == all1.bytes);
  EXPECT_EQ(next.epoch_checksum, all1.epoch_checksum);

  // Stopped after the first batch of epoch 0.
  Iterator early(index, c);
  early.start_epoch(0);
  ASSERT_NE(early.next(), nullptr);
  const Position at = early.position();
  Iterator again(index, c);
  const test::EpochRecord tail = test::run_epoch(again, at.epoch, at.index);
  ASSERT_EQ(tail.batch_checksums.size() + 1, all0.batch_checksums.size());
  for (size_t i = 0; i < tail.batch_checksums.size(); ++i) {
    EXPECT_EQ(tail.batch_checksums[i], all0.batch_checksums[i + 1]) << "batch " << i + 1;
    EXPECT_EQ(tail.bytes[i], all0.bytes[i + 1]) << "batch " << i + 1;
  }
}

// ---- sizes that change over a run (loader/sampler/size_schedule.h)
// --------------------------------

// An epoch schedule: 32, 64, then 96 px. Every reader gives serial's checksums, each epoch
// equals a fixed-size run at that epoch's size (the crops are a function of the seed alone),
// and the pool was sized once for 96 px: its bytes never change.
TEST_P(ReaderSuite, EpochSizeScheduleEqualsSerialAndFixedSizeRuns) {
  std::string root;
  if (!prepare(clean_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  LoaderConfig c = config(reader(), source().kind);
  c.size_schedule = parse_size_schedule("32:96@0-2");
  LoaderConfig serial = config("serial", reference_kind());
  serial.size_schedule = c.size_schedule;
  const Index local = open_index(local_);
  const Outcome want = run(local, serial, 3);
  Iterator it(index, c);
  LoaderConfig fixed96 = config(reader(), source().kind);
  fixed96.transform.size = 96;
  const size_t pool = Iterator(index, fixed96).pool_bytes();
  EXPECT_EQ(it.pool_bytes(), pool);
  const int sides[] = {32, 64, 96};
  for (uint64_t e = 0; e < 3; ++e) {
    it.start_epoch(e);
    while (const Batch* b = it.next()) {
      ASSERT_EQ(b->spec.width, sides[e]) << "epoch " << e;
      ASSERT_EQ(b->spec.height, sides[e]) << "epoch " << e;
    }
    EXPECT_EQ(it.epoch_checksum(), want.checksums[e]) << "epoch " << e;
    EXPECT_EQ(it.pool_bytes(), pool) << "epoch " << e;
    LoaderConfig fixed = config("serial", reference_kind());
    fixed.transform.size = sides[e];
    Iterator one(local, fixed);
    EXPECT_EQ(test::run_epoch(one, e).epoch_checksum, want.checksums[e]) << "epoch " << e;
  }
}

// A step schedule changes the size between batches of one epoch (prefetched batches of two
// sizes in flight at once); a run resumed in the middle of the ramp continues exactly.
TEST_P(ReaderSuite, StepSizeScheduleResumesMidRampExactly) {
  std::string root;
  if (!prepare(clean_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  LoaderConfig c = config(reader(), source().kind);
  c.size_schedule = parse_size_schedule("32:96@steps:4-12");
  LoaderConfig serial = config("serial", reference_kind());
  serial.size_schedule = c.size_schedule;
  const Index local = open_index(local_);
  Iterator reference(local, serial);
  const test::EpochRecord want = test::run_epoch(reference, 1);
  Iterator whole(index, c);
  const size_t per_epoch = whole.batches_per_epoch();
  std::vector<int> sides;
  whole.start_epoch(1);
  while (const Batch* b = whole.next()) sides.push_back(b->spec.width);
  ASSERT_EQ(sides.size(), per_epoch);
  for (size_t k = 0; k < sides.size(); ++k)
    EXPECT_EQ(sides[k], c.size_schedule.at(1, per_epoch + k)) << "batch " << k;
  EXPECT_NE(sides.front(), sides.back()) << "the ramp must cross this epoch";
  const test::EpochRecord all = test::run_epoch(whole, 1);
  EXPECT_EQ(all.batch_checksums, want.batch_checksums);
  expect_resume_after_two_batches(index, c, all);
}

INSTANTIATE_TEST_SUITE_P(All, ReaderSuite, ::testing::ValuesIn(pairs(false)), param_name);

// A reader that needs an asynchronous source, over a source the user named that has none: a
// usage error naming the reader and the source, before anything is read; never another
// source in its place.
using RefusedPair = ReaderSuite;
TEST_P(RefusedPair, IsAUsageErrorNamingReaderAndSource) {
  std::string root;
  if (!prepare(clean_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  try {
    Iterator it(index, config(reader(), source().kind));
    FAIL() << "accepted";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(reader()), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string("the ") + source_kind_name(source().kind) + " source"),
              std::string::npos)
        << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(All, RefusedPair, ::testing::ValuesIn(pairs(true)), param_name);

}  // namespace
}  // namespace stoker
