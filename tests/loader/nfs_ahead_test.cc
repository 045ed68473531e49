// SPDX-License-Identifier: Apache-2.0
// The NFS client's read-ahead for range reads (shard members read front to back, as under
// --shard-order sequential): the bytes are the file's, synchronously and with many reads in
// flight, up to the short last window at the end of the file; forward runs are served from
// windows, random reads ask for none, and the windows held stay within kAheadWindows
// however many files are read at once. Against a real NFS-Ganesha (tests/loader/nfs_server.h).
#include <algorithm>
#include <numeric>
#include <random>

#include "loader/sources/nfs_client.h"
#include "loader/sources/nfs_url.h"
#include "nfs_server.h"
#include "test_util.h"

namespace stoker {
namespace {

using test::NfsServer;
using test::TempDir;

struct Member {
  uint64_t offset = 0, length = 0;
};

// Members of a shard of `size` bytes, back to back with small gaps (tar headers), lengths
// 0 to ~90 KB; the last one ends at the end of the file.
std::vector<Member> members_of(uint64_t size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Member> out;
  uint64_t at = 0;
  while (true) {
    at += 512 * (rng() % 3);
    const uint64_t len = rng() % 17 == 0 ? 0 : 1 + rng() % 90'000;
    if (at + len >= size) break;
    out.push_back({at, len});
    at += len;
  }
  out.push_back({at, size - at});
  return out;
}

std::vector<uint8_t> pattern(size_t n, uint32_t salt) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>((i + salt) * 2654435761u >> 13);
  return b;
}

class NfsAhead : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    for (int i = 0; i < kFiles; ++i) {
      // Not a multiple of kAhead: the last window of each is short.
      files_.push_back(pattern(NfsClient::kAhead * 2 + 1'234'567 + 4099 * i, i));
      test::write_bytes(*dir_ / fmt::format("s/shard-{}.tar", i), files_.back());
    }
    server_ = new NfsServer(dir_->path());
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  void SetUp() override { STOKER_REQUIRE_NFS(*server_); }

  static NfsUrl root() { return parse_nfs_url(server_->url_of("s")); }

  static NfsClient::Read read_of(int file, const Member& m, std::vector<uint8_t>& buf) {
    NfsClient::Read r;
    r.path = fmt::format("shard-{}.tar", file);
    r.offset = m.offset;
    r.length = m.length;
    r.sink = {[](void* self, size_t n) {
                auto& v = *static_cast<std::vector<uint8_t>*>(self);
                v.resize(n);
                return v.data();
              },
              &buf};
    return r;
  }

  static void expect_bytes(int file, const Member& m, const uint8_t* data, size_t bytes) {
    ASSERT_EQ(bytes, m.length) << "file " << file << " offset " << m.offset;
    const auto& want = files_[size_t(file)];
    EXPECT_TRUE(std::equal(data, data + bytes, want.begin() + long(m.offset)))
        << "file " << file << " offset " << m.offset << " length " << m.length;
  }

  static constexpr int kFiles = 3;
  static TempDir* dir_;
  static NfsServer* server_;
  static std::vector<std::vector<uint8_t>> files_;
};

TempDir* NfsAhead::dir_ = nullptr;
NfsServer* NfsAhead::server_ = nullptr;
std::vector<std::vector<uint8_t>> NfsAhead::files_;

TEST_F(NfsAhead, ForwardRunSynchronousIsTheFilesBytesFromWindows) {
  NfsClient client(root());
  const auto members = members_of(files_[0].size(), 1);
  std::vector<uint8_t> buf;
  for (const Member& m : members) {
    const auto got = client.read(read_of(0, m, buf));
    expect_bytes(0, m, got.data(), got.size());
  }
  // All but the first few reads of the run come from windows; the windows cover the file.
  EXPECT_GT(client.ahead_hits(), members.size() * 9 / 10) << members.size() << " members";
  EXPECT_GE(client.ahead_windows(), files_[0].size() / NfsClient::kAhead);
  EXPECT_LE(client.windows_held(), NfsClient::kAheadWindows);
}

TEST_F(NfsAhead, ForwardRunsInFlightInterleavedFilesStayBounded) {
  NfsClient client(root());
  std::vector<std::pair<int, Member>> order;
  std::vector<std::vector<Member>> per(kFiles);
  for (int f = 0; f < kFiles; ++f) per[size_t(f)] = members_of(files_[size_t(f)].size(), 10 + f);
  // Round robin over the files: every file's reads run forward, interleaved.
  for (size_t k = 0;; ++k) {
    bool any = false;
    for (int f = 0; f < kFiles; ++f) {
      if (k < per[size_t(f)].size()) order.emplace_back(f, per[size_t(f)][k]), any = true;
    }
    if (!any) break;
  }
  constexpr size_t kDepth = 16;
  std::vector<std::vector<uint8_t>> bufs(order.size());
  std::vector<NfsClient::Done> done;
  size_t submitted = 0, most_windows = 0;
  while (done.size() < order.size()) {
    while (submitted < order.size() && submitted - done.size() < kDepth) {
      NfsClient::Read r = read_of(order[submitted].first, order[submitted].second, bufs[submitted]);
      r.tag = submitted++;
      client.submit(r);
      most_windows = std::max(most_windows, client.windows_held());
    }
    client.reap(done, kDepth, 5000);
  }
  for (const NfsClient::Done& d : done) {
    ASSERT_TRUE(d.error.empty()) << d.error;
    expect_bytes(order[d.tag].first, order[d.tag].second, d.data, d.bytes);
  }
  EXPECT_GT(client.ahead_hits(), order.size() / 2);
  EXPECT_LE(most_windows, NfsClient::kAheadWindows);
}

TEST_F(NfsAhead, RandomReadsAskForNoWindow) {
  NfsClient client(root());
  auto members = members_of(files_[1].size(), 2);
  // Every read backwards: no forward run, so nothing read ahead.
  std::reverse(members.begin(), members.end());
  std::vector<uint8_t> buf;
  for (const Member& m : members) {
    const auto got = client.read(read_of(1, m, buf));
    expect_bytes(1, m, got.data(), got.size());
  }
  EXPECT_EQ(client.ahead_windows(), 0u);
  EXPECT_EQ(client.ahead_hits(), 0u);
}

TEST_F(NfsAhead, ShuffleBufferOrderIsTheFilesBytes) {
  // Forward in windows of 64 members, shuffled inside each (a shuffle buffer's order):
  // some reads from windows, some past them, every one the file's bytes.
  NfsClient client(root());
  auto members = members_of(files_[2].size(), 3);
  std::mt19937 rng(7);
  for (size_t at = 0; at < members.size(); at += 64)
    std::shuffle(members.begin() + long(at),
                 members.begin() + long(std::min(at + 64, members.size())), rng);
  std::vector<uint8_t> buf;
  for (const Member& m : members) {
    const auto got = client.read(read_of(2, m, buf));
    expect_bytes(2, m, got.data(), got.size());
  }
}

}  // namespace
}  // namespace stoker
