// SPDX-License-Identifier: Apache-2.0
// The source layer under the readers (the suite's datasets and configuration:
// reader_suite.h): a failing asynchronous source reaches next() as an error, a synchronous
// source under a reader that needs submit/reap is refused naming both, the NFS and shard
// hooks say what is missing, pread reads whole files and ranges, and one location builder.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "reader_suite.h"

namespace stoker {
namespace {

using namespace suite;

// ---- the source layer itself ------------------------------------------------------------

// A source that breaks after `good` reads, as a ring or a server can: the reader's failure
// must reach next() as a stoker::Error, never a hang, an abort or a print.
class BreakingSource final : public Source {
 public:
  explicit BreakingSource(int good) : good_(good), inner_(make_null_source({})) {}
  const char* name() const override { return "breaking"; }
  uint32_t capabilities() const override { return kAsync; }
  std::unique_ptr<Source> clone() const override { return std::make_unique<BreakingSource>(good_); }
  std::span<const uint8_t> read(const SampleLocation& w, ReadBuffer& b) override {
    return inner_->read(w, b);
  }
  size_t queue_depth() const override { return 4; }
  void submit(const ReadRequest& r) override {
    if (good_-- <= 0) fail("breaking source: submit failed (as io_uring_submit can)");
    inner_->submit(r);
  }
  size_t reap(std::vector<ReadCompletion>& out, size_t max, int timeout_ms) override {
    return inner_->reap(out, max, timeout_ms);
  }

 private:
  int good_;
  std::unique_ptr<Source> inner_;
};

TEST(SourceLayer, AsyncReaderFailureReachesNext) {
  const Index index = open_index(clean_set());
  Iterator it(index, config("uring:4:2", SourceOptions::Kind::automatic),
              std::make_unique<BreakingSource>(10));
  it.start_epoch(0);
  try {
    while (it.next()) {
    }
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("submit failed"), std::string::npos) << e.what();
  }
  // Still an error, not a hang, on the next epoch; and the iterator can be destroyed.
  EXPECT_THROW(
      {
        it.start_epoch(1);
        it.next();
      },
      Error);
}

// A synchronous source that is not local files (as NFS without submit/reap would be).
class SyncOnlySource final : public Source {
 public:
  const char* name() const override { return "sync-only"; }
  uint32_t capabilities() const override { return 0; }
  std::unique_ptr<Source> clone() const override { return std::make_unique<SyncOnlySource>(); }
  std::span<const uint8_t> read(const SampleLocation&, ReadBuffer&) override {
    return null_source_jpeg();
  }
};

TEST(SourceLayer, SynchronousSourceUnderUringReaderIsRefusedNamingBoth) {
  const Index index = open_index(clean_set());
  try {
    Iterator it(index, config("uring:8:2", SourceOptions::Kind::automatic),
                std::make_unique<SyncOnlySource>());
    FAIL() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("uring:8:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sync-only"), std::string::npos) << e.what();
  }
  // Under a reader that calls read(), the same source serves every sample.
  Iterator it(index, config("threads:2", SourceOptions::Kind::automatic),
              std::make_unique<SyncOnlySource>());
  EXPECT_EQ(test::run_epoch(it, 0).batch_checksums.size(), it.batches_per_epoch());
}

TEST(SourceLayer, NfsAndShardHooksSayWhatIsMissing) {
  SourceSpec nfs{"nfs://127.0.0.1/export/data", false, {}};
#if STOKER_HAVE_NFS
  // The NFS source connects on first use: no server exporting this -> an error naming it.
  ReadBuffer buf;
  EXPECT_THROW(make_source(nfs)->read(
                   {"nfs://127.0.0.1/export/data/a/x.jpg", 0, SampleLocation::kWholeFile}, buf),
               Error);
#else
  EXPECT_THROW(make_source(nfs), Error);
#endif
  SourceSpec local_uring{"nfs://127.0.0.1/export/data", false, {}};
  local_uring.options.kind = SourceOptions::Kind::pread;
  try {
    make_source(local_uring);
    FAIL() << "pread accepted a URL";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nfs://127.0.0.1/export/data"), std::string::npos);
  }
}

TEST(SourceLayer, PreadReadsWholeFilesAndRanges) {
  TempDir d;
  std::vector<uint8_t> bytes(10000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7);
  test::write_bytes(d / "f.bin", bytes);
  const std::string path = d / "f.bin";
  for (const auto kind : {SourceOptions::Kind::pread, SourceOptions::Kind::uring}) {
    SourceOptions o;
    o.kind = kind;
    std::unique_ptr<Source> s;
    try {
      s = make_source(SourceSpec{d.path(), false, o});
    } catch (const Error& e) {
      continue;  // no io_uring here
    }
    ReadBuffer buf;
    auto whole = s->read({path, 0, SampleLocation::kWholeFile}, buf);
    EXPECT_TRUE(std::equal(whole.begin(), whole.end(), bytes.begin(), bytes.end()));
    auto range = s->read({path, 1000, 500}, buf);
    EXPECT_TRUE(std::equal(range.begin(), range.end(), bytes.begin() + 1000, bytes.begin() + 1500));
    EXPECT_THROW(s->read({path, 9900, 500}, buf), Error);  // past the end: truncated
    EXPECT_ERROR("missing", s->read({d / "missing", 0, SampleLocation::kWholeFile}, buf));
    if (!s->asynchronous()) continue;
    s->submit({1, {path, 2000, 100}, &buf});
    ReadBuffer other;
    s->submit({2, {d / "missing", 0, SampleLocation::kWholeFile}, &other});
    std::vector<ReadCompletion> done;
    while (done.size() < 2) s->reap(done, 8, 1000);
    std::sort(done.begin(), done.end(), [](auto& a, auto& b) { return a.tag < b.tag; });
    EXPECT_EQ(done[0].bytes, 100u);
    EXPECT_TRUE(done[0].error.empty());
    EXPECT_EQ(buf.data()[0], bytes[2000]);
    EXPECT_NE(done[1].error.find("missing"), std::string::npos) << done[1].error;
  }
}

TEST(SourceLayer, OneLocationBuilderWhateverTheRootEndsWith) {
  std::string out;
  join_location(out, "/data/", "a/b.jpg");
  EXPECT_EQ(out, "/data/a/b.jpg");
  join_location(out, "/data", "a/b.jpg");
  EXPECT_EQ(out, "/data/a/b.jpg");
  join_location(out, "nfs://h/export", "a.jpg");
  EXPECT_EQ(out, "nfs://h/export/a.jpg");
  Index idx;
  idx.root = "/d/";
  idx.shards = {"s-0.tar"};
  idx.add_member("k.jpg", 0, 512, 100, 3);
  std::string scratch;
  const SampleLocation w = locate_sample(idx, 0, scratch);
  EXPECT_EQ(w.file, "/d/s-0.tar");
  EXPECT_EQ(w.offset, 512u);
  EXPECT_EQ(w.length, 100u);
  EXPECT_EQ(idx.path(0), "/d/s-0.tar:k.jpg");
}

}  // namespace
}  // namespace stoker
