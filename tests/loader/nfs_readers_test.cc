// SPDX-License-Identifier: Apache-2.0
// What is NFS-only about reading an nfs:// dataset (a real NFS-Ganesha on 127.0.0.1): a shard
// index file's own URL opens the shards, and a server stopped mid-epoch is an error naming the
// URL within a bounded time, under --on-error skip too (the storage failing is not a bad
// sample), batches so far kept. Checksums, bad-file policy, a file gone after indexing and
// resume over NFS, for every reader: reader_suite_test.cc.
#include <chrono>
#include <filesystem>

#include "common/error.h"
#include "loader/index/index.h"
#include "loader/iterator.h"
#include "loader_test_util.h"
#include "nfs_server.h"
#include "reader_table.h"
#include "test_util.h"
#include "tools/pack/pack_shards.h"

namespace stoker {
namespace {

using test::NfsServer;
using test::TempDir;

LoaderConfig config_for(const std::string& reader) {
  LoaderConfig c;
  c.reader = parse_reader(reader);
  c.sampler.batch_size = 4;
  c.sampler.seed = 5;
  c.transform.size = 32;
  c.prefetch = 2;
  c.warn = false;
  return c;
}

class NfsReaders : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    clean_ = test::make_dataset(*dir_, GenPattern::photo, 64, 3, 8);
    server_ = new NfsServer(dir_->path());
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  void SetUp() override { STOKER_REQUIRE_NFS(*server_); }

  static std::string url_of(const std::string& local) {
    return server_->url_of(std::filesystem::relative(local, dir_->path()).string());
  }

  static TempDir* dir_;
  static std::string clean_;
  static NfsServer* server_;
};

TempDir* NfsReaders::dir_ = nullptr;
std::string NfsReaders::clean_;
NfsServer* NfsReaders::server_ = nullptr;

TEST_F(NfsReaders, ShardIndexFileUrlOpensTheShards) {
  PackConfig p;
  p.data = clean_;
  p.out = *dir_ / "shards";
  p.shard_size = 100'000;  // several shards
  p.progress = false;
  pack_shards(p);
  const Index nfs = open_index(url_of(*dir_ / "shards"));
  ASSERT_TRUE(nfs.sharded());
  EXPECT_GT(nfs.shards.size(), 1u);
  EXPECT_EQ(open_index(url_of(*dir_ / "shards/stoker-shards.tsv")).size(), nfs.size());
}

TEST(NfsReadersFaults, ServerStoppedMidEpochIsAnErrorNamingTheUrl) {
  TempDir d;
  const std::string root = test::make_dataset(d, GenPattern::photo, 64, 2, 24);
  // Every reader of the suite's table, each with a server of its own: each run stops it (so
  // not ReaderSuite rows, whose NFS rows share one server).
  for (const char* reader : suite::kReaders) {
    NfsServer server(d.path());
    STOKER_REQUIRE_NFS(server);
    const std::string url = server.url_of(std::filesystem::relative(root, d.path()).string());
    const Index index = open_index(url);
    LoaderConfig c = config_for(reader);
    c.on_error = ErrorPolicy::skip;  // the storage failing is not a bad sample
    Iterator it(index, c);
    it.start_epoch(0);
    const Batch* first = it.next();
    ASSERT_NE(first, nullptr) << reader;
    const uint64_t first_checksum = first->checksum;
    server.stop();
    const auto t0 = std::chrono::steady_clock::now();
    std::string error;
    size_t batches = 1;
    try {
      while (it.next()) ++batches;
    } catch (const Error& e) {
      error = e.what();
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(batches, it.batches_per_epoch()) << reader << ": the epoch finished anyway";
    EXPECT_NE(error.find("nfs://127.0.0.1"), std::string::npos) << reader << ": " << error;
    EXPECT_LT(s, 15.0) << reader;
    EXPECT_TRUE(it.bad_samples().list().empty()) << reader << ": a dead server made files bad";
    EXPECT_NE(first_checksum, 0u);
  }
}

}  // namespace
}  // namespace stoker
