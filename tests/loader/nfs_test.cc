// SPDX-License-Identifier: Apache-2.0
// nfs:// datasets against a real NFS-Ganesha on 127.0.0.1 (tests/loader/nfs_server.h): URLs,
// indexing over NFS against the local index of the same tree (itself checked against
// torchvision), the NFS source's bytes against the local files (sync, many in flight,
// ranges, files larger than one READ), and faults: missing files, no server, a server
// stopped or hung mid-read -> an error naming the URL, the server (host:port) and a file
// being read, within a bounded time. Read-ahead for shard members: nfs_ahead_test.cc.
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <map>

#include "common/error.h"
#include "loader/index/index.h"
#include "loader/index/index_nfs.h"
#include "loader/sources/nfs_client.h"
#include "loader/sources/nfs_url.h"
#include "loader/sources/source.h"
#include "nfs_server.h"
#include "test_util.h"
#include "tools/gen/gen_dataset.h"

namespace stoker {
namespace {

using test::NfsServer;
using test::TempDir;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(NfsUrl, ParseTextJoin) {
  const NfsUrl u = parse_nfs_url("nfs://127.0.0.1/srv/data/?nfsport=2049&mountport=20048");
  EXPECT_EQ(u.server, "127.0.0.1");
  EXPECT_EQ(u.path, "/srv/data");
  EXPECT_EQ(u.args, "nfsport=2049&mountport=20048");
  EXPECT_EQ(u.text(), "nfs://127.0.0.1/srv/data?nfsport=2049&mountport=20048");
  EXPECT_EQ(u.join("a/b.jpg"), "nfs://127.0.0.1/srv/data/a/b.jpg?nfsport=2049&mountport=20048");
  const NfsUrl bare = parse_nfs_url("nfs://host");
  EXPECT_EQ(bare.path, "/");
  EXPECT_EQ(bare.join("x.jpg"), "nfs://host/x.jpg");
  EXPECT_TRUE(is_nfs_url("nfs://h/p"));
  EXPECT_FALSE(is_nfs_url("/nfs/h/p"));
}

TEST(NfsUrl, Errors) {
  EXPECT_ERROR("nfs:///path", parse_nfs_url("nfs:///path"));                  // no server
  EXPECT_ERROR("nfsport=1/rest", parse_nfs_url("nfs://h/p?nfsport=1/rest"));  // path after args
  EXPECT_ERROR("/local/path", parse_nfs_url("/local/path"));
}

TEST(NfsUrl, JoinLocationKeepsArgsLast) {
  std::string out;
  join_location(out, "nfs://h/data?nfsport=2049", "c/x.jpg");
  EXPECT_EQ(out, "nfs://h/data/c/x.jpg?nfsport=2049");
  join_location(out, "nfs://h/data/", "c/x.jpg");
  EXPECT_EQ(out, "nfs://h/data/c/x.jpg");
  join_location(out, "/local/dir?odd", "c/x.jpg");  // a local name may hold a '?'
  EXPECT_EQ(out, "/local/dir?odd/c/x.jpg");
}

// A fixture-wide dataset and server: a generated tree, torchvision's tricky names, a list
// file and one file larger than the server's largest READ.
class Nfs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    GenConfig g;
    g.out = *dir_ / "gen";
    g.sizes = {48};
    g.classes = 3;
    g.per_class = 7;
    g.progress = false;
    generate_dataset(g);
    for (const char* f : {"b/2.jpg", "b/10.jpg", "b/1.JPEG", "a/z.png", "a/sub/x.jpg",
                          "a/sub-y/q.jpg", "a/A.jpg", "B/only.webp", "a/.hidden.jpg",
                          "a/readme.txt", "a/noext", ".git/x.jpg", "a/sub/deeper/y.bmp"}) {
      test::write_text(*dir_ / ("tricky/" + std::string(f)), f);
    }
    std::filesystem::create_directories(*dir_ / "tricky/c_empty");
    std::filesystem::create_symlink("../b/2.jpg", *dir_ / "tricky/a/link.jpg");
    std::filesystem::create_symlink("nowhere.jpg", *dir_ / "tricky/a/dangling.jpg");
    test::write_text(*dir_ / "tricky/list.txt", "b/2.jpg 1\n# comment\na/z.png 0\n");
    std::vector<uint8_t> big(2'500'000 + 123);
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
    test::write_bytes(*dir_ / "big/blob.bin", big);
    server_ = new NfsServer(dir_->path());
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  void SetUp() override { STOKER_REQUIRE_NFS(*server_); }

  static std::unique_ptr<Source> nfs_source(const std::string& root, uint32_t depth = 0) {
    return make_source(SourceSpec{root, false, SourceOptions{}, depth});
  }

  static TempDir* dir_;
  static NfsServer* server_;
};

TempDir* Nfs::dir_ = nullptr;
NfsServer* Nfs::server_ = nullptr;

void expect_same_samples(const Index& nfs, const Index& local) {
  EXPECT_EQ(nfs.classes, local.classes);
  EXPECT_EQ(nfs.empty_classes, local.empty_classes);
  ASSERT_EQ(nfs.size(), local.size());
  for (size_t i = 0; i < local.size(); ++i) {
    EXPECT_EQ(nfs.relative_path(i), local.relative_path(i)) << i;
    EXPECT_EQ(nfs.bytes[i], local.bytes[i]) << local.relative_path(i);
    EXPECT_EQ(nfs.label[i], local.label[i]) << local.relative_path(i);
  }
}

TEST_F(Nfs, IndexesATreeAsLocally) {
  const std::string url = server_->url_of("gen");
  const Index nfs = open_index(url);
  expect_same_samples(nfs, index_image_folder(*dir_ / "gen"));
  EXPECT_EQ(nfs.size(), 21u);
  EXPECT_EQ(nfs.root, url);
  // Sample names keep the URL's arguments last.
  EXPECT_EQ(nfs.path(0), server_->url_of("gen/" + std::string(nfs.relative_path(0))));
}

TEST_F(Nfs, TorchvisionOrderHiddenFilesAndLinks) {
  // The local scanner's order is checked against torchvision (index_vs_torchvision.py);
  // over NFS it must be the same, links followed and dangling ones skipped alike.
  const Index nfs = index_nfs(server_->url_of("tricky"));
  const Index local = index_image_folder(*dir_ / "tricky");
  expect_same_samples(nfs, local);
  EXPECT_EQ(std::string(nfs.relative_path(1)), "a/A.jpg");
  EXPECT_EQ(nfs.empty_classes, (std::vector<std::string>{"c_empty"}));
}

TEST_F(Nfs, ListFile) {
  const Index nfs = open_index(server_->url_of("tricky/list.txt"));
  const Index local = open_index(*dir_ / "tricky/list.txt");
  expect_same_samples(nfs, local);
  EXPECT_EQ(nfs.root, server_->url_of("tricky"));
  try {
    test::write_text(*dir_ / "tricky/bad-list.txt", "b/2.jpg 1\nmissing.jpg 0\n");
    open_index(server_->url_of("tricky/bad-list.txt"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "missing.jpg")) << e.what();
    EXPECT_TRUE(contains(e.what(), "sample 1")) << e.what();
  }
}

TEST_F(Nfs, MissingDatasetNamesTheUrl) {
  const std::string url = server_->url_of("no-such-dir");
  try {
    open_index(url);
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "no-such-dir")) << e.what();
  }
}

TEST_F(Nfs, SyncReadsAreTheFilesBytes) {
  const Index index = open_index(server_->url_of("gen"));
  auto src = nfs_source(index.root);
  EXPECT_STREQ(src->name(), "nfs");
  ReadBuffer buf;
  std::string scratch;
  for (size_t i = 0; i < index.size(); ++i) {
    const auto got = src->read(locate_sample(index, i, scratch), buf);
    const auto want = test::read_bytes(*dir_ / ("gen/" + std::string(index.relative_path(i))));
    ASSERT_EQ(std::vector<uint8_t>(got.begin(), got.end()), want) << index.relative_path(i);
  }
}

TEST_F(Nfs, ManyReadsInFlight) {
  const Index index = open_index(server_->url_of("gen"));
  constexpr uint32_t kDepth = 8;
  auto src = nfs_source(index.root, kDepth);
  ASSERT_EQ(src->queue_depth(), kDepth);
  std::vector<ReadBuffer> bufs(index.size());
  std::vector<std::string> names(index.size());
  std::vector<ReadCompletion> done;
  size_t next = 0, in_flight = 0, max_in_flight = 0;
  while (done.size() < index.size()) {
    while (in_flight < kDepth && next < index.size()) {
      ReadRequest r;
      r.tag = next;
      r.where = locate_sample(index, next, names[next]);
      r.buffer = &bufs[next];
      src->submit(r);
      ++next;
      max_in_flight = std::max(max_in_flight, ++in_flight);
    }
    in_flight -= src->reap(done, kDepth, 5000);
  }
  EXPECT_EQ(max_in_flight, kDepth);
  std::vector<bool> seen(index.size());
  for (const ReadCompletion& c : done) {
    ASSERT_TRUE(c.error.empty()) << c.error;
    ASSERT_LT(c.tag, index.size());
    seen[c.tag] = true;
    const auto want = test::read_bytes(*dir_ / ("gen/" + std::string(index.relative_path(c.tag))));
    ASSERT_EQ(c.bytes, want.size());
    EXPECT_EQ(std::memcmp(bufs[c.tag].data(), want.data(), want.size()), 0);
    EXPECT_GT(c.read_ns, 0);
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), static_cast<long>(index.size()));
}

TEST_F(Nfs, MissingFileIsThatReadsErrorOnly) {
  auto src = nfs_source(server_->url_of("gen"), 4);
  const std::string missing = server_->url_of("gen/class_000/vanished.jpg");
  ReadBuffer buf;
  try {
    src->read({missing, 0, SampleLocation::kWholeFile}, buf);
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), missing)) << e.what();
  }
  // Asynchronously: an error for that request, the others unharmed.
  const Index index = open_index(server_->url_of("gen"));
  std::string name0;
  ReadBuffer b0, b1;
  src->submit({1, {missing, 0, SampleLocation::kWholeFile}, &b1});
  src->submit({0, locate_sample(index, 0, name0), &b0});
  std::vector<ReadCompletion> done;
  while (done.size() < 2) src->reap(done, 2, 5000);
  for (const ReadCompletion& c : done) {
    if (c.tag == 1) {
      EXPECT_TRUE(contains(c.error, missing)) << c.error;
    } else {
      EXPECT_TRUE(c.error.empty()) << c.error;
      EXPECT_EQ(c.bytes, index.bytes[0]);
    }
  }
}

TEST_F(Nfs, RangesAndFilesLargerThanOneRead) {
  const auto want = test::read_bytes(*dir_ / "big/blob.bin");
  auto src = nfs_source(server_->url_of("big"));
  const std::string url = server_->url_of("big/blob.bin");
  ReadBuffer buf;
  const auto whole = src->read({url, 0, SampleLocation::kWholeFile}, buf);
  ASSERT_EQ(std::vector<uint8_t>(whole.begin(), whole.end()), want);
  // A shard member: offset and length, across READ boundaries.
  const auto part = src->read({url, 1'000'003, 1'200'000}, buf);
  ASSERT_EQ(part.size(), 1'200'000u);
  EXPECT_TRUE(std::equal(part.begin(), part.end(), want.begin() + 1'000'003));
  // Many members of one file in flight at once (one OPEN shared by all of them).
  auto async = nfs_source(server_->url_of("big"), 16);
  std::vector<ReadBuffer> bufs(64);
  std::vector<ReadCompletion> done;
  size_t submitted = 0;
  auto member = [](size_t k) { return SampleLocation{"", k * 37'001, 5'000 + k * 113}; };
  while (done.size() < bufs.size()) {
    while (submitted < bufs.size() && submitted - done.size() < 16) {
      SampleLocation where = member(submitted);
      where.file = url;
      async->submit({submitted, where, &bufs[submitted]});
      ++submitted;
    }
    async->reap(done, 16, 5000);
  }
  for (const ReadCompletion& c : done) {
    ASSERT_TRUE(c.error.empty()) << c.error;
    const SampleLocation m = member(c.tag);
    ASSERT_EQ(c.bytes, m.length);
    EXPECT_TRUE(std::equal(bufs[c.tag].data(), bufs[c.tag].data() + c.bytes,
                           want.begin() + static_cast<long>(m.offset)))
        << c.tag;
  }
  try {
    src->read({url, want.size() - 10, 100}, buf);
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "truncated")) << e.what();
    EXPECT_TRUE(contains(e.what(), url)) << e.what();
  }
}

// A port nobody listens on.
int closed_port() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(NfsFaults, NoServerIsAClearError) {
  const int port = closed_port();
  const std::string url =
      "nfs://127.0.0.1/data?nfsport=" + std::to_string(port) + "&mountport=" + std::to_string(port);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    open_index(url);
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), url)) << e.what();
    // Issue 47: nothing was ever connected, so no "lost the connection"; the hint the
    // portmapper path gives, whichever way the ports were found.
    EXPECT_TRUE(contains(e.what(), "cannot mount /data: no NFS server answered at 127.0.0.1"))
        << e.what();
    EXPECT_TRUE(contains(e.what(), "scripts/nfs_serve.sh starts one")) << e.what();
    EXPECT_FALSE(contains(e.what(), "lost the connection")) << e.what();
  }
  EXPECT_LT(seconds_since(t0), 10.0);
}

NfsClient::Sink into(std::vector<uint8_t>& b) {
  return {[](void* self, size_t n) {
            auto& v = *static_cast<std::vector<uint8_t>*>(self);
            v.resize(n);
            return v.data();
          },
          &b};
}

// Reads in flight when the server goes away: an error naming the URL, soon.
void expect_fails_in_flight(NfsServer& server, const std::string& dir, bool hang) {
  const std::string root = server.url_of("d");
  NfsClient client(parse_nfs_url(root), 2000);
  std::vector<std::vector<uint8_t>> bufs(16);
  std::vector<NfsClient::Done> done;
  // Warm up the connection, then stop the server and ask for more.
  for (int i = 0; i < 2; ++i) {
    NfsClient::Read r;
    r.path = fmt::format("f{}.bin", i);
    r.sink = into(bufs[i]);
    ASSERT_EQ(client.read(r).size(), 300'000u);
  }
  if (hang) {
    server.pause();
  } else {
    server.stop();
  }
  const auto t0 = std::chrono::steady_clock::now();
  try {
    for (int i = 0; i < 16; ++i) {
      NfsClient::Read r;
      r.tag = i;
      r.path = fmt::format("f{}.bin", i);
      r.sink = into(bufs[i]);
      client.submit(r);
    }
    while (client.in_flight() > 0) client.reap(done, 16, 500);
    ADD_FAILURE() << "reads succeeded with the server " << (hang ? "hung" : "stopped") << " ("
                  << dir << ")";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), root)) << e.what();
    // The server by host:port, and a file it was reading (issue 42).
    const NfsUrl u = parse_nfs_url(root);
    const std::string port = u.args.substr(8, u.args.find('&') - 8);  // nfsport=N&...
    EXPECT_TRUE(contains(e.what(), "(NFS server 127.0.0.1:" + port + ", while reading "))
        << e.what();
    EXPECT_TRUE(contains(e.what(), root.substr(0, root.find('?')) + "/f")) << e.what();
    EXPECT_TRUE(contains(e.what(), hang ? "no answer from the NFS server for 2 s"
                                        : "lost the connection to the NFS server"))
        << e.what();
  }
  EXPECT_LT(seconds_since(t0), 6.0);
  // Broken stays broken: no hang on the next call either.
  EXPECT_THROW(client.reap(done, 1, 100), Error);
  server.resume();
}

TEST(NfsFaults, ServerStoppedMidReads) {
  TempDir d;
  for (int i = 0; i < 16; ++i)
    test::write_bytes(d / fmt::format("d/f{}.bin", i), std::vector<uint8_t>(300'000, 7));
  NfsServer server(d.path());
  STOKER_REQUIRE_NFS(server);
  expect_fails_in_flight(server, d.path(), false);
}

TEST(NfsFaults, HungServerTimesOut) {
  TempDir d;
  for (int i = 0; i < 16; ++i)
    test::write_bytes(d / fmt::format("d/f{}.bin", i), std::vector<uint8_t>(300'000, 7));
  NfsServer server(d.path());
  STOKER_REQUIRE_NFS(server);
  expect_fails_in_flight(server, d.path(), true);
}

}  // namespace
}  // namespace stoker
