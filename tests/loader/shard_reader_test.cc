// SPDX-License-Identifier: Apache-2.0
// Packed shards under the readers: sequential order is deterministic for any reader, visits
// every sample once, and both orders resume mid-epoch exactly. Global order giving the file
// tree's batches bit for bit under every reader: the shards rows of reader_suite_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <vector>

#include "common/error.h"
#include "loader/iterator.h"
#include "loader_test_util.h"
#include "reader_table.h"
#include "tools/pack/pack_shards.h"

namespace stoker {
namespace {

using test::EpochRecord;
using test::make_dataset;
using test::run_epoch;
using test::TempDir;

LoaderConfig config_for(const std::string& reader, SamplerConfig::ShardOrder order,
                        size_t buffer = 8) {
  LoaderConfig c;
  c.reader = parse_reader(reader);
  c.sampler.batch_size = 7;
  c.sampler.seed = 23;
  c.sampler.shard_order = order;
  c.sampler.shuffle_buffer = buffer;
  c.transform.size = 40;
  c.prefetch = 3;
  c.warn = false;
  return c;
}

struct Packed {
  TempDir dir;
  std::string tree, shards;
  Packed() {
    tree = make_dataset(dir, GenPattern::photo, 64, 3, 12);
    PackConfig p;
    p.data = tree;
    p.out = dir / "shards";
    p.shard_size = 24'000;  // several samples per shard, several shards
    p.progress = false;
    pack_shards(p);
    shards = p.out;
  }
};

constexpr auto kGlobal = SamplerConfig::ShardOrder::global;
constexpr auto kSequential = SamplerConfig::ShardOrder::sequential;

TEST(ShardReader, SequentialOrderIsDeterministicForAnyReader) {
  Packed p;
  const Index shards = open_index(p.shards);
  std::vector<EpochRecord> runs;
  // Not ReaderSuite rows: sequential order is a shards-only sampler mode. Serial, then every
  // reader of the suite's table, serial again among them (a repeat must agree with itself).
  std::vector<const char*> readers = {"serial"};
  readers.insert(readers.end(), std::begin(suite::kReaders), std::end(suite::kReaders));
  for (const char* reader : readers) {
    Iterator it(shards, config_for(reader, kSequential));
    runs.push_back(run_epoch(it, 4));
    // Every sample once, in the sampler's (sequential) order.
    std::vector<uint32_t> seen;
    it.start_epoch(4);
    while (const Batch* b = it.next())
      seen.insert(seen.end(), b->indices.begin(), b->indices.begin() + b->size);
    for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], it.sampler().at(i)) << reader;
    std::sort(seen.begin(), seen.end());
    for (size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i], i) << reader;
    ASSERT_EQ(seen.size(), shards.size());
  }
  for (const auto& r : runs) {
    EXPECT_EQ(r.epoch_checksum, runs[0].epoch_checksum);
    EXPECT_EQ(r.batch_checksums, runs[0].batch_checksums);
  }
  Iterator global(shards, config_for("serial", kGlobal));
  EXPECT_NE(run_epoch(global, 4).epoch_checksum, runs[0].epoch_checksum);
  Iterator bigger(shards, config_for("serial", kSequential, 9));
  EXPECT_NE(run_epoch(bigger, 4).epoch_checksum, runs[0].epoch_checksum) << "buffer size";
  Iterator next_epoch(shards, config_for("serial", kSequential));
  EXPECT_NE(run_epoch(next_epoch, 5).epoch_checksum, runs[0].epoch_checksum);
}

TEST(ShardReader, ResumeMidEpochGivesTheSameBatches) {
  Packed p;
  const Index shards = open_index(p.shards);
  for (auto order : {kGlobal, kSequential}) {
    Iterator straight(shards, config_for("threads:2", order));
    const EpochRecord whole = run_epoch(straight, 2);
    // Split at a batch boundary: the first part by one run, the rest by a fresh iterator.
    Iterator first(shards, config_for("serial", order));
    first.start_epoch(2);
    std::vector<uint64_t> parts;
    for (int b = 0; b < 3; ++b) parts.push_back(first.next()->checksum);
    const Position at = first.position();
    ASSERT_EQ(at.index, 21u);
    Iterator rest(shards, config_for("threads:3", order));
    const EpochRecord tail = run_epoch(rest, at.epoch, at.index);
    parts.insert(parts.end(), tail.batch_checksums.begin(), tail.batch_checksums.end());
    EXPECT_EQ(parts, whole.batch_checksums) << (order == kGlobal ? "global" : "sequential");
  }
}

TEST(ShardReader, SequentialOrderNeedsShards) {
  Packed p;
  const Index tree = open_index(p.tree);
  try {
    Iterator it(tree, config_for("serial", kSequential));
    FAIL() << "sequential order accepted on a file tree";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("stoker pack"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stoker
