// SPDX-License-Identifier: Apache-2.0
// The reader suite's bad-input matrix (its tables and fixture: reader_suite.h), over every
// (reader, source) pair: files bad before indexing and gone after it against serial, each
// bad file replaced, listed once and named with its reason, --on-error fail naming one, and
// a set with nothing good an error rather than a hang.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <set>
#include <string>
#include <vector>

#include "reader_suite.h"

namespace stoker {
namespace {

using namespace suite;

// Files bad before indexing (truncated, empty, text) and one gone after it: every reader
// over every source of files skips the same ones, with the same batches and replacements, as
// serial over pread on the local copy. A tree of this test's own, since a file of it goes (on
// the NFS rows from the served copy: the server no longer has it; packed shards keep it).
TEST_P(ReaderSuite, FilesBadOrGoneAfterIndexingAreSkippedAsSerialSkipsThem) {
  if (!source().reads_files)
    STOKER_SKIP_HONEST("not-applicable", "the null source serves fixed bytes: nothing is bad");
  const std::string tree = test::make_dataset(scratch_, GenPattern::index, 64, 3, 12);
  const auto good = test::read_bytes(tree + "/class_000/img_000000.jpg");
  test::write_bytes(tree + "/class_000/img_000100.jpg",
                    {good.begin(), good.begin() + ptrdiff_t(good.size() / 2)});  // truncated
  test::write_bytes(tree + "/class_001/img_000100.jpg", {});
  test::write_text(tree + "/class_002/img_000100.jpg", "not an image at all\n");
  const std::string gone = "class_002/img_000101.jpg";
  test::write_bytes(tree + "/" + gone, good);
  std::string root;
  if (!prepare(tree, root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  const Index local = open_index(local_);
  ASSERT_EQ(index.size(), 40u);
  std::filesystem::remove(local_ + "/" + gone);  // gone from a tree; a shard keeps its bytes
  const Outcome want = run(local, config("serial", reference_kind()));
  const Outcome got = run(index, config(reader(), source().kind));
  EXPECT_EQ(want.bad.size(), index.sharded() ? 3u : 4u);
  EXPECT_EQ(got.checksums, want.checksums);
  EXPECT_EQ(got.replacements, want.replacements);
  ASSERT_EQ(got.bad.size(), want.bad.size());
  for (size_t i = 0; i < want.bad.size(); ++i) {
    const auto& [index_got, rel, why] = got.bad[i];
    EXPECT_EQ(index_got, std::get<0>(want.bad[i]));
    EXPECT_EQ(rel, std::get<1>(want.bad[i]));
    // A file gone from a server fails in the server's words, not the local filesystem's.
    if (root == local_ || rel != gone) {
      EXPECT_EQ(why, std::get<2>(want.bad[i])) << rel;
    }
    EXPECT_NE(why.find(rel), std::string::npos) << why;  // names the file
  }
}

// ---- the bad-input matrix --------------------------------------------------------------

// Under `skip` every bad file is replaced (batches stay full), listed once with a reason that
// names it and says why, and never reaches a batch; under `fail` the run stops naming one;
// a set with nothing good is an error. Never a crash or a hang. A tree of each test's own.
size_t find_marker(const std::vector<uint8_t>& b, uint8_t code) {
  for (size_t i = 0; i + 1 < b.size(); ++i)
    if (b[i] == 0xff && b[i + 1] == code) return i;
  return std::string::npos;
}

// 36 good images and 9 more: 6 bad (relative path -> words of the reason), a PNG named .jpg
// (not bad: it decodes by content) and two good files that break_after_indexing breaks.
struct BadInputTree {
  std::string root;
  std::map<std::string, std::string> expect;
};

BadInputTree bad_input_tree(const TempDir& dir) {
  BadInputTree t;
  t.root = test::make_dataset(dir, GenPattern::index, 64, 3, 12);
  const auto put = [&](const std::string& rel, const std::vector<uint8_t>& bytes) {
    test::write_bytes(t.root + "/" + rel, bytes);
  };
  const std::vector<uint8_t> good = test::read_bytes(t.root + "/class_000/img_000000.jpg");
  auto b = good;
  b.resize(b.size() / 2);
  put("class_000/img_000100.jpg", b);  // truncated
  t.expect["class_000/img_000100.jpg"] = "Premature end";
  b = good;
  const size_t sos = find_marker(b, 0xda);
  b.resize(sos + (b.size() - sos) / 3);
  b.push_back(0xff);
  b.push_back(0xd9);
  put("class_001/img_000100.jpg", b);  // corrupt scan
  t.expect["class_001/img_000100.jpg"] = "corrupt JPEG data";
  put("class_001/img_000101.jpg", {});  // zero bytes
  t.expect["class_001/img_000101.jpg"] = "empty";
  const std::string text = "not an image at all\n";
  put("class_002/img_000100.jpg", {text.begin(), text.end()});
  t.expect["class_002/img_000100.jpg"] = "not a recognised image";
  b = good;
  const size_t sof = find_marker(b, 0xc0);
  b[sof + 1] = 0xc1;
  b[sof + 4] = 12;
  put("class_002/img_000101.jpg", b);
  t.expect["class_002/img_000101.jpg"] = "12-bit";
  b = good;
  b[sof + 5] = 0x75, b[sof + 6] = 0x30, b[sof + 7] = 0x75, b[sof + 8] = 0x30;
  put("class_002/img_000102.jpg", b);
  t.expect["class_002/img_000102.jpg"] = "limit";
  std::vector<uint8_t> png;
  cv::imencode(".png", cv::Mat(64, 64, CV_8UC3, cv::Scalar(8, 8, 8)), png);
  put("class_000/img_000101.jpg", png);
  put("class_000/img_000102.jpg", good);
  put("class_001/img_000102.jpg", good);
  return t;
}

// Two files of the tree at `local` go bad after indexing: one removed, one a folder now.
void break_after_indexing(const std::string& local, std::map<std::string, std::string>& expect) {
  std::filesystem::remove(local + "/class_000/img_000102.jpg");
  expect["class_000/img_000102.jpg"] = "No such file";
  std::filesystem::remove(local + "/class_001/img_000102.jpg");
  std::filesystem::create_directory(local + "/class_001/img_000102.jpg");
  expect["class_001/img_000102.jpg"] = "not a regular file";
}

// Files bad before indexing everywhere; on trees (not shards, which keep their bytes) two
// that go bad after it, on the NFS rows in the served copy (the reason then in the server's
// words: only that it names the file is checked).
TEST_P(ReaderSuite, SkipReplacesCountsAndListsEveryBadFile) {
  if (!source().reads_files)
    STOKER_SKIP_HONEST("not-applicable", "the null source serves fixed bytes: nothing is bad");
  BadInputTree t = bad_input_tree(scratch_);
  std::string root;
  if (!prepare(t.root, root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  ASSERT_EQ(index.size(), 36u + 9u);
  const size_t bad_before = t.expect.size();
  if (!index.sharded()) break_after_indexing(local_, t.expect);
  LoaderConfig c = config(reader(), source().kind);
  c.sampler.batch_size = 7;
  Iterator it(index, c);
  uint64_t extra_attempts = 0;
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    it.start_epoch(epoch);
    size_t seen = 0;
    while (const Batch* b = it.next()) {
      if (it.position().index < index.size()) {
        EXPECT_EQ(b->size, 7u);  // full batches
      }
      for (size_t i = 0; i < b->size; ++i) {
        extra_attempts += b->timing[i].attempts - 1;
        const std::string rel(index.relative_path(b->indices[i]));
        EXPECT_EQ(t.expect.count(rel), 0u) << rel << " reached a batch";
      }
      seen += b->size;
    }
    EXPECT_EQ(seen, index.size());
  }
  const auto bad = it.bad_samples().list();
  std::set<std::string> listed;
  for (const BadSample& s : bad) {
    const std::string rel(index.relative_path(s.index));
    listed.insert(rel);
    ASSERT_TRUE(t.expect.count(rel)) << "unexpected bad sample " << rel << ": " << s.reason;
    EXPECT_NE(s.reason.find(rel), std::string::npos) << s.reason;  // names the file
    const bool gone_from_a_server =
        root != local_ && (rel == "class_000/img_000102.jpg" || rel == "class_001/img_000102.jpg");
    if (!gone_from_a_server) {
      EXPECT_NE(s.reason.find(t.expect[rel]), std::string::npos) << s.reason;
    }
  }
  EXPECT_EQ(listed.size(), t.expect.size());
  EXPECT_EQ(t.expect.size(), bad_before + (index.sharded() ? 0 : 2));
  EXPECT_EQ(bad.size(), t.expect.size()) << "each file is listed once over two epochs";
  // Every failed attempt counts; neighbouring bad files make chains, so at least one per bad
  // file per epoch, and exactly the attempts the batches report beyond the first.
  EXPECT_GE(it.bad_samples().skipped.load(), 2 * t.expect.size());
  EXPECT_EQ(it.bad_samples().skipped.load(), extra_attempts);

  c.on_error = ErrorPolicy::fail;
  Iterator failing(index, c);
  failing.start_epoch(0);
  try {
    while (failing.next()) {
    }
    FAIL() << "no error under --on-error fail";
  } catch (const Error& e) {
    const std::string msg = e.what();
    bool named = false;
    for (const auto& [rel, why] : t.expect) named |= msg.find(rel) != std::string::npos;
    EXPECT_TRUE(named) << msg;
  }
}

// A set with no good sample at all, and a replacement limit: an error, not a hang.
TEST_P(ReaderSuite, AllSamplesBadIsAnErrorNotAHang) {
  if (!source().reads_files)
    STOKER_SKIP_HONEST("not-applicable", "the null source serves fixed bytes: nothing is bad");
  for (int i = 0; i < 30; ++i)
    test::write_text(scratch_ / ("junk/c/" + std::to_string(i) + ".jpg"), "junk");
  std::string root;
  if (!prepare(scratch_ / "junk", root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  LoaderConfig c = config(reader(), source().kind);
  c.max_replacements = 8;
  Iterator it(index, c);
  it.start_epoch(0);
  EXPECT_THROW(
      {
        while (it.next()) {
        }
      },
      Error);
}

}  // namespace
}  // namespace stoker
