// SPDX-License-Identifier: Apache-2.0
// One fault suite for every local source and reader (fio's way: one set of cases over every
// engine), parameterised over (source, fault): pread and packed shards' byte ranges under
// threads:2, io_uring buffered and O_DIRECT under uring:QD:T. Faults are injected
// into the real I/O (io_faults.h: pread(2) and io_uring completions): short reads (unaligned
// and block-aligned), reads interrupted once (EINTR, and -EAGAIN for io_uring), both at once,
// and a read error on one file. Each run's batches are compared with serial over pread
// without faults: continued reads give the same checksums and bytes, and a read error is that
// sample's error naming the file, replaced as serial replaces an unreadable file. A second
// suite over the same rows: files changed after indexing read as they are now. What only one
// source has (submit refusals, a file shrinking under io_uring, page-cache eviction) is in
// source_uring_test.cc and source_pread_test.cc.
#include <cstring>
#include <filesystem>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "fault_run.h"
#include "io_faults.h"
#include "loader/iterator.h"
#include "loader_test_util.h"
#include "test_util.h"
#include "tools/pack/pack_shards.h"

namespace stoker {
namespace {

using test::FaultPlan;
using test::Faults;
using test::Outcome;
using test::run;

struct SourceCase {
  const char* name;
  const char* reader;
  SourceOptions::Kind source;
  bool direct = false;  // O_DIRECT
  bool shards = false;  // the dataset packed into shards, read by byte ranges
  bool uring() const { return source == SourceOptions::Kind::uring; }
};

const SourceCase kSources[] = {
    {"pread_threads", "threads:2", SourceOptions::Kind::pread},
    {"shards_threads", "threads:2", SourceOptions::Kind::automatic, false, true},
    {"uring", "uring:4:2", SourceOptions::Kind::uring},
    {"uring_direct", "uring:8:2", SourceOptions::Kind::uring, true},
};

// A fault as a plan for both layers: a source meets the half it reads through (pread, or
// io_uring completions; O_DIRECT reads an unaligned tail through pread).
struct FaultCase {
  const char* name;
  FaultPlan plan;
  bool uring_only = false;   // pread(2) has no -EAGAIN for regular files
  bool direct_only = false;  // another short read for any other source
  bool retried = false;      // every read fails once, then succeeds
  bool read_error = false;   // one file unreadable (path_has is set to it)
};

std::vector<FaultCase> faults() {
  std::vector<FaultCase> f(6);
  f[0].name = "short_reads";
  f[0].plan.pread_max = 777;
  f[0].plan.cqe_max = 1000;
  f[1].name = "block_aligned_short_reads";  // O_DIRECT asks for the rest with O_DIRECT again
  f[1].plan.pread_max = 4096;
  f[1].plan.cqe_max = 4096;
  f[1].direct_only = true;
  f[2].name = "eintr";
  f[2].plan.pread_eintr = true;
  f[2].plan.cqe_retry = EINTR;
  f[2].retried = true;
  f[3].name = "eagain";
  f[3].plan.cqe_retry = EAGAIN;
  f[3].uring_only = f[3].retried = true;
  f[4].name = "short_and_eintr";  // an EINTR must not cut a continued read short
  f[4].plan.pread_max = 5000;
  f[4].plan.pread_eintr = true;
  f[4].plan.cqe_max = 5000;
  f[4].plan.cqe_retry = EINTR;
  f[5].name = "read_error";
  f[5].plan.pread_errno = EIO;
  f[5].plan.cqe_errno = EIO;
  f[5].read_error = true;
  return f;
}

// Every (source, fault) pair that means something: no -EAGAIN for pread, block-aligned short
// reads only where O_DIRECT makes them differ, and a read error takes one sample's file,
// which a shard is not.
std::vector<std::tuple<SourceCase, FaultCase>> cases() {
  std::vector<std::tuple<SourceCase, FaultCase>> out;
  for (const SourceCase& s : kSources)
    for (const FaultCase& f : faults())
      if (!(f.uring_only && !s.uring()) && !(f.direct_only && !s.direct) &&
          !(f.read_error && s.shards))
        out.emplace_back(s, f);
  return out;
}

LoaderConfig config(const SourceCase& s) {
  LoaderConfig c = test::source_config(s.reader);
  c.source.kind = s.source;
  c.source.direct = s.direct;
  return c;
}

// gtest prints the parameters in each test's name: the cases' names, not their bytes.
void PrintTo(const SourceCase& s, std::ostream* os) {
  *os << s.name;
}
void PrintTo(const FaultCase& f, std::ostream* os) {
  *os << f.name;
}

const SourceCase& source_of(const SourceCase& s) {
  return s;
}
const SourceCase& source_of(const std::tuple<SourceCase, FaultCase>& p) {
  return std::get<0>(p);
}

// A suite over the source rows (P: a row, or a row and a fault): the dataset, skipped where
// the row cannot run here, packed into shards for the shards row.
template <class P>
class SourceRows : public ::testing::TestWithParam<P> {
 protected:
  void SetUp() override {
    const SourceCase& s = source_of(this->GetParam());
    if (s.uring() && !test::uring_works())
      STOKER_SKIP_HONEST("no-io-uring", "no io_uring here (source_uring_test tests the fallback)");
    data.make();
    if (s.direct && !data.direct_supported())
      STOKER_SKIP_HONEST("no-o-direct", "O_DIRECT is not supported on " << data.dir.path());
    if (s.shards) {
      PackConfig pc;
      pc.data = data.root;
      pc.out = data.dir / "shards";
      pc.shard_size = 32 * 1024;
      pc.progress = false;
      pack_shards(pc);
      shards = open_index(pc.out);
    }
  }
  test::SourceData data;
  Index shards;
};

using SourceFaults = SourceRows<std::tuple<SourceCase, FaultCase>>;

TEST_P(SourceFaults, ReadsAreContinuedOrTheSampleIsReported) {
  const auto& [s, fault] = GetParam();
  FaultPlan plan = fault.plan;
  const std::string victim = data.file(2);
  if (fault.read_error) plan.path_has = victim;
  Outcome got;
  uint64_t faulted = 0, reads = 0;
  {
    Faults f(plan);
    got = run(s.shards ? shards : data.index, config(s));
    faulted = f.counts().pread_faults + f.counts().cqe_faults;
    reads = f.counts().pread_calls + f.counts().cqes;
  }
  EXPECT_EQ(got.reader, s.reader);  // no fallback: the faults hit the source asked for
  if (fault.read_error) {
    ASSERT_EQ(got.bad.size(), 1u);
    EXPECT_EQ(std::get<0>(got.bad[0]), 2u);
    const std::string& reason = std::get<1>(got.bad[0]);
    EXPECT_NE(reason.find(victim), std::string::npos) << reason;
    EXPECT_NE(reason.find("Input/output error"), std::string::npos) << reason;
    // Replaced by the same samples as serial replaces an unreadable file with.
    const std::string path = data.root + "/" + victim;
    const std::vector<uint8_t> bytes = test::read_bytes(path);
    test::write_text(path, "unreadable");
    EXPECT_EQ(got.checksums, run(data.index, test::source_config("serial")).checksums);
    test::write_bytes(path, bytes);
    return;
  }
  EXPECT_EQ(got.checksums, data.want.checksums);
  EXPECT_TRUE(got.bad.empty()) << std::get<1>(got.bad.at(0));
  EXPECT_EQ(got.bytes_read, data.want.bytes_read);
  EXPECT_GT(faulted, data.index.size());  // every file met the fault, most in several pieces
  // Every read failed once: as many faults as reads that succeeded.
  if (fault.retried) {
    EXPECT_EQ(2 * faulted, reads);
  }
}

INSTANTIATE_TEST_SUITE_P(Sources, SourceFaults, ::testing::ValuesIn(cases()), [](const auto& info) {
  return std::string(std::get<0>(info.param).name) + "_" + std::get<1>(info.param).name;
});

// Files changed after indexing, for real: one shorter, one longer (junk after the image's
// end), one replaced by a directory. Every source of loose files reads them as they are now,
// as serial over pread does (packed shards keep the bytes they were packed with: not a row).
using SourceChanges = SourceRows<SourceCase>;
TEST_P(SourceChanges, FilesChangedAfterIndexingAreReadAsTheyAreNow) {
  const SourceCase& s = GetParam();
  const std::string root = data.root + "/";
  const std::vector<uint8_t> a = test::read_bytes(root + data.file(1));
  test::write_bytes(root + data.file(1), std::vector<uint8_t>(a.begin(), a.begin() + 3000));
  std::vector<uint8_t> b = test::read_bytes(root + data.file(3));
  b.resize(b.size() + 20000, 0x5a);
  test::write_bytes(root + data.file(3), b);
  std::filesystem::remove(root + data.file(5));
  std::filesystem::create_directory(root + data.file(5));
  const Outcome serial = run(data.index, test::source_config("serial"));
  ASSERT_EQ(serial.bad.size(), 2u);  // the short one and the directory
  const Outcome got = run(data.index, config(s));
  EXPECT_EQ(got.reader, s.reader);
  EXPECT_EQ(got.checksums, serial.checksums);
  EXPECT_EQ(got.bad, serial.bad);
  EXPECT_EQ(got.bytes_read, serial.bytes_read);
}

std::vector<SourceCase> loose_file_rows() {
  std::vector<SourceCase> out;
  for (const SourceCase& s : kSources)
    if (!s.shards) out.push_back(s);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Sources, SourceChanges, ::testing::ValuesIn(loose_file_rows()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace stoker
