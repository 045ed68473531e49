// SPDX-License-Identifier: Apache-2.0
// Packed shards opened as an index and read through the `shards` source: the same samples,
// labels and bytes as the file tree they were packed from; damaged packs named clearly.
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "loader/index/index.h"
#include "loader/index/shard_index.h"
#include "loader/sources/source.h"
#include "loader_test_util.h"
#include "tools/pack/pack_shards.h"

namespace stoker {
namespace {

using test::TempDir;

std::string pack(const TempDir& d, const std::string& data, uint64_t shard_size) {
  PackConfig c;
  c.data = data;
  c.out = d / "shards";
  c.shard_size = shard_size;
  c.progress = false;
  pack_shards(c);
  return c.out;
}

TEST(ShardsSource, SameSamplesLabelsAndBytesAsTheTree) {
  TempDir d;
  const std::string data = test::make_dataset(d, GenPattern::photo, 48, 3, 6);
  const std::string out = pack(d, data, 16'000);
  const Index tree = open_index(data);
  for (const std::string& opened : {out, out + "/" + kShardIndexName}) {
    const Index shards = open_index(opened);
    ASSERT_TRUE(shards.sharded());
    EXPECT_GT(shards.shards.size(), 2u);
    ASSERT_EQ(shards.size(), tree.size());
    EXPECT_EQ(shards.classes, tree.classes);
    EXPECT_EQ(shards.label, tree.label);
    EXPECT_EQ(shards.bytes, tree.bytes);
    auto source = make_source(shards, SourceOptions{});
    EXPECT_STREQ(source->name(), "shards");
    auto other = source->clone();  // another thread's instance reads the same
    auto files = make_source(tree, SourceOptions{});
    ReadBuffer a, b, c;
    std::string sa, sb;
    for (size_t i = shards.size(); i-- > 0;) {  // backwards: offsets, not a stream
      EXPECT_EQ(shards.relative_path(i), tree.relative_path(i));
      const auto got = source->read(locate_sample(shards, i, sa), a);
      const auto want = files->read(locate_sample(tree, i, sb), b);
      ASSERT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end())) << i;
      const auto again = other->read(locate_sample(shards, i, sa), c);
      ASSERT_TRUE(std::equal(again.begin(), again.end(), want.begin(), want.end())) << i;
    }
    // The message name says which shard and which original file.
    EXPECT_NE(shards.path(0).find("shard-000000.tar:class_000/img_000000.jpg"), std::string::npos)
        << shards.path(0);
  }
}

// --source shards; "shard" is its older name, still read (deprecated); the name is "shards".
TEST(ShardsSource, OlderNameIsAnAlias) {
  EXPECT_EQ(parse_source_kind("shards"), SourceOptions::Kind::shards);
  EXPECT_EQ(parse_source_kind("shard"), SourceOptions::Kind::shards);
  EXPECT_STREQ(source_kind_name(SourceOptions::Kind::shards), "shards");
  EXPECT_THROW(parse_source_kind("shardz"), Error);
}

TEST(ShardsSource, DamagedPacksAreNamed) {
  TempDir d;
  const std::string data = test::make_dataset(d, GenPattern::photo, 48, 2, 3);
  const std::string out = pack(d, data, 16'000);
  const std::string shard0 = out + "/shard-000000.tar";
  const Index shards = open_index(out);
  // A shard truncated after opening: the read names the shard and says what is missing.
  std::filesystem::resize_file(shard0, shards.offset[0] + 10);
  auto source = make_source(shards, SourceOptions{});
  ReadBuffer buf;
  std::string scratch;
  try {
    source->read(locate_sample(shards, 0, scratch), buf);
    FAIL() << "a truncated shard was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard-000000.tar"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
  // Opening it again: the size differs from the index's.
  EXPECT_THROW(
      {
        try {
          open_index(out);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("the index says"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  std::filesystem::remove(shard0);
  EXPECT_THROW(open_index(out), Error);
  // Whole-file locations are not the shards source's job.
  EXPECT_THROW(source->read({shard0, 0, SampleLocation::kWholeFile}, buf), Error);
}

}  // namespace
}  // namespace stoker
