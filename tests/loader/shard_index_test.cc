// SPDX-License-Identifier: Apache-2.0
// The shard index file round-trips, and a damaged one is refused naming file:line; the tar
// header refuses what ustar cannot hold. (GNU tar and Python's tarfile check the archives
// themselves, in tests/tools/pack_test.sh.)
#include <array>
#include <fstream>

#include "common/error.h"
#include "loader/index/shard_index.h"
#include "loader/sources/tar_writer.h"
#include "test_util.h"

namespace stoker {
namespace {

using test::TempDir;
using test::write_text;

ShardIndexFile two_shards() {
  ShardIndexFile f;
  f.classes = {"cat", "dog with space"};
  f.shards = {{"shard-000000.tar", 4096}, {"shard-000001.tar", 2048}};
  f.add(0, 512, 1000, 0, "cat/a b.jpg");
  f.add(0, 2048, 7, 1, "dog with space/x.JPEG");
  f.add(1, 512, 0, 1, "dog with space/empty.jpg");
  return f;
}

TEST(ShardIndex, RoundTrip) {
  TempDir d;
  const std::string file = d / kShardIndexName;
  write_shard_index(two_shards(), file);
  EXPECT_TRUE(is_shard_index(file));
  EXPECT_FALSE(std::filesystem::exists(file + ".partial"));
  const ShardIndexFile r = read_shard_index(file);
  EXPECT_EQ(r.classes, two_shards().classes);
  ASSERT_EQ(r.shards.size(), 2u);
  EXPECT_EQ(r.shards[1].file, "shard-000001.tar");
  EXPECT_EQ(r.shards[0].bytes, 4096u);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r.shard, (std::vector<uint32_t>{0, 0, 1}));
  EXPECT_EQ(r.offset, (std::vector<uint64_t>{512, 2048, 512}));
  EXPECT_EQ(r.length, (std::vector<uint64_t>{1000, 7, 0}));
  EXPECT_EQ(r.label, (std::vector<uint32_t>{0, 1, 1}));
  EXPECT_STREQ(r.path(1), "dog with space/x.JPEG");
}

void expect_refused(const std::string& text, const std::string& what) {
  TempDir d;
  const std::string file = d / "idx.tsv";
  write_text(file, text);
  try {
    read_shard_index(file);
    FAIL() << "accepted: " << text;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(ShardIndex, DamagedFilesNameLineAndReason) {
  const std::string head = "stoker-shards\t1\t1\t1\t1\nclass\tc\nshard\t4096\ts.tar\n";
  expect_refused("hello\n", "not a shard index");
  expect_refused("stoker-shards\t9\t1\t1\t1\n", "version 9");
  expect_refused(head, "ends at line 3");  // truncated: no sample line
  expect_refused(head + "0\t512\t10\t1\tc/x.jpg\n", ":4: label 1 of 1");
  expect_refused(head + "1\t512\t10\t0\tc/x.jpg\n", ":4: shard 1 of 1");
  expect_refused(head + "0\t4000\t100\t0\tc/x.jpg\n", "outside shard 's.tar'");
  expect_refused(head + "0\t-5\t10\t0\tc/x.jpg\n", "offset '-5'");
  expect_refused(head + "0\t512\t10\t0\tc/x.jpg\nextra\n", "more lines");
}

TEST(ShardIndex, SeparatorsInNamesAreRefused) {
  TempDir d;
  ShardIndexFile f = two_shards();
  f.add(1, 512, 1, 0, "cat/tab\there.jpg");
  EXPECT_THROW(write_shard_index(f, d / "i.tsv"), Error);
  EXPECT_FALSE(std::filesystem::exists(d / "i.tsv"));
  EXPECT_FALSE(std::filesystem::exists(d / "i.tsv.partial"));
}

TEST(TarHeader, ChecksumAndLimits) {
  std::array<uint8_t, kTarBlock> h{};
  tar_header("000000001.jpg", 1234, h);
  // The checksum field: six octal digits, NUL, space; the sum counts the field as spaces.
  uint32_t sum = 0;
  for (size_t i = 0; i < kTarBlock; ++i) sum += (i >= 148 && i < 156) ? ' ' : h[i];
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&h[148]), 6), fmt::format("{:06o}", sum));
  EXPECT_EQ(h[154], 0);
  EXPECT_EQ(h[155], ' ');
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(&h[124]), 11), "00000002322");  // 1234
  EXPECT_ERROR("aaaa", tar_header(std::string(101, 'a'), 1, h));
  EXPECT_ERROR("big", tar_header("big", uint64_t{1} << 33, h));
  EXPECT_EQ(tar_member_bytes(0), 512u);
  EXPECT_EQ(tar_member_bytes(1), 1024u);
  EXPECT_EQ(tar_member_bytes(512), 1024u);
}

}  // namespace
}  // namespace stoker
