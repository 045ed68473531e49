// SPDX-License-Identifier: Apache-2.0
// The bad-input matrix through the whole iterator: under `skip` every bad file is replaced
// (batches stay full), listed once with a reason that names it, and never reaches a batch;
// under `fail` the run stops with an error naming the file. Never a crash or a hang.
#include <gtest/gtest.h>

#include <unistd.h>

#include <map>
#include <opencv2/imgcodecs.hpp>
#include <set>

#include "common/error.h"
#include "loader/iterator.h"
#include "test_util.h"
#include "tools/gen/gen_dataset.h"

namespace stoker {
namespace {

using test::TempDir;

size_t find_marker(const std::vector<uint8_t>& b, uint8_t code) {
  for (size_t i = 0; i + 1 < b.size(); ++i)
    if (b[i] == 0xff && b[i + 1] == code) return i;
  return std::string::npos;
}

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    GenConfig g;
    g.out = dir / "data";
    g.sizes = {64};
    g.classes = 3;
    g.per_class = 12;
    g.pattern = GenPattern::index;
    g.progress = false;
    root = generate_dataset(g).roots.at(0);
    good = test::read_bytes(root + "/class_000/img_000000.jpg");
    // Files that are bad before indexing (name -> expected words in the reason).
    auto b = good;
    b.resize(b.size() / 2);
    put("class_000/img_000100.jpg", b);  // truncated
    expect["class_000/img_000100.jpg"] = "Premature end";
    b = good;
    const size_t sos = find_marker(b, 0xda);
    b.resize(sos + (b.size() - sos) / 3);
    b.push_back(0xff);
    b.push_back(0xd9);
    put("class_001/img_000100.jpg", b);  // corrupt scan
    expect["class_001/img_000100.jpg"] = "corrupt JPEG data";
    put("class_001/img_000101.jpg", {});  // zero bytes
    expect["class_001/img_000101.jpg"] = "empty";
    const std::string text = "not an image at all\n";
    put("class_002/img_000100.jpg", {text.begin(), text.end()});
    expect["class_002/img_000100.jpg"] = "not a recognised image";
    b = good;
    const size_t sof = find_marker(b, 0xc0);
    b[sof + 1] = 0xc1;
    b[sof + 4] = 12;
    put("class_002/img_000101.jpg", b);
    expect["class_002/img_000101.jpg"] = "12-bit";
    b = good;
    b[sof + 5] = 0x75, b[sof + 6] = 0x30, b[sof + 7] = 0x75, b[sof + 8] = 0x30;
    put("class_002/img_000102.jpg", b);
    expect["class_002/img_000102.jpg"] = "limit";
    // A PNG named .jpg is not bad: it decodes by content.
    std::vector<uint8_t> png;
    cv::imencode(".png", cv::Mat(64, 64, CV_8UC3, cv::Scalar(8, 8, 8)), png);
    put("class_000/img_000101.jpg", png);
    // Files that go bad after indexing.
    put("class_000/img_000102.jpg", good);
    put("class_001/img_000102.jpg", good);
  }

  void put(const std::string& rel, const std::vector<uint8_t>& bytes) {
    test::write_bytes(root + "/" + rel, bytes);
  }

  void break_after_indexing() {
    std::filesystem::remove(root + "/class_000/img_000102.jpg");
    expect["class_000/img_000102.jpg"] = "No such file";
    std::filesystem::remove(root + "/class_001/img_000102.jpg");
    std::filesystem::create_directory(root + "/class_001/img_000102.jpg");
    expect["class_001/img_000102.jpg"] = "not a regular file";
  }

  LoaderConfig config(const char* reader, ErrorPolicy policy) {
    LoaderConfig c;
    c.reader = parse_reader(reader);
    c.sampler.batch_size = 7;
    c.transform.size = 32;
    c.on_error = policy;
    c.warn = false;
    return c;
  }

  TempDir dir;
  std::string root;
  std::vector<uint8_t> good;
  std::map<std::string, std::string> expect;
};

TEST_F(BadInput, SkipReplacesCountsAndListsEveryBadFile) {
  const Index index = open_index(root);
  ASSERT_EQ(index.size(), 36u + 9u);
  break_after_indexing();
  // Not ReaderSuite rows: the fixture breaks files after indexing, with the reason each one
  // must give; every (reader, source) pair meets corrupted files in the suite.
  for (const char* reader : {"serial", "threads:3"}) {
    Iterator it(index, config(reader, ErrorPolicy::skip));
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
          EXPECT_EQ(expect.count(rel), 0u) << rel << " reached a batch";
        }
        seen += b->size;
      }
      EXPECT_EQ(seen, index.size());
    }
    const auto bad = it.bad_samples().list();
    std::set<std::string> listed;
    for (const BadSample& s : bad) {
      const std::string rel = s.path.substr(root.size() + 1);
      listed.insert(rel);
      ASSERT_TRUE(expect.count(rel)) << "unexpected bad sample " << rel << ": " << s.reason;
      EXPECT_NE(s.reason.find(rel), std::string::npos) << s.reason;  // names the file
      EXPECT_NE(s.reason.find(expect[rel]), std::string::npos) << s.reason;
    }
    EXPECT_EQ(listed.size(), expect.size()) << reader;
    EXPECT_EQ(bad.size(), expect.size()) << "each file is listed once over two epochs";
    // Every failed attempt counts; neighbouring bad files make chains, so at least one per
    // bad file per epoch, and exactly the attempts the batches report beyond the first.
    EXPECT_GE(it.bad_samples().skipped.load(), 2 * expect.size());
    EXPECT_EQ(it.bad_samples().skipped.load(), extra_attempts);
  }
}

TEST_F(BadInput, FailStopsWithAnErrorNamingTheFile) {
  const Index index = open_index(root);
  // The fixture's files and reasons (ReaderSuite.FailPolicyStopsNamingABadFile: every pair).
  for (const char* reader : {"serial", "threads:2"}) {
    Iterator it(index, config(reader, ErrorPolicy::fail));
    it.start_epoch(0);
    try {
      while (it.next()) {
      }
      FAIL() << "no error under --on-error fail";
    } catch (const Error& e) {
      const std::string msg = e.what();
      bool named = false;
      for (const auto& [rel, why] : expect) named |= msg.find(rel) != std::string::npos;
      EXPECT_TRUE(named) << msg;
    }
  }
}

TEST_F(BadInput, AllSamplesBadIsAnErrorNotAHang) {
  TempDir d2;
  for (int i = 0; i < 30; ++i) test::write_text(d2 / ("c/" + std::to_string(i) + ".jpg"), "junk");
  const Index index = open_index(d2.path());
  // Not ReaderSuite rows: a set with no good sample at all, and a replacement limit.
  for (const char* reader : {"serial", "threads:2"}) {
    LoaderConfig c = config(reader, ErrorPolicy::skip);
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
}

}  // namespace
}  // namespace stoker
