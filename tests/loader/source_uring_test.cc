// SPDX-License-Identifier: Apache-2.0
// What only the io_uring source has, driven by injected faults (io_faults.h) through the real
// uring:QD:T reader (the faults every source meets, short reads, -EAGAIN/-EINTR and read
// errors, and files changed after indexing, are source_faults_test.cc's suites'): a file that
// shrank after fstat read as it is now (buffered and O_DIRECT, whose unaligned tail is read
// buffered), a refused submit retried and a failed one stopping the reader with the reason,
// and the fallback to threads:T where io_uring cannot start. Each outcome is compared with
// serial over pread. Without liburing in the build, only the fallback is tested.
#include <cerrno>
#include <filesystem>
#include <tuple>

#include "common/error.h"
#include "fault_run.h"
#include "io_faults.h"
#include "loader/iterator.h"
#include "loader_test_util.h"
#include "test_util.h"

namespace stoker {
namespace {

using test::FaultPlan;
using test::Faults;
using test::Outcome;
using test::run;
using test::TempDir;

// The tests' loader, the source left to the reader (a uring reader gets the uring source).
LoaderConfig config(const std::string& reader) {
  LoaderConfig c = test::source_config(reader);
  c.source.kind = SourceOptions::Kind::automatic;
  return c;
}

class UringFaults : public ::testing::Test, protected test::SourceData {
 protected:
  void SetUp() override {
    if (!test::uring_works())
      STOKER_SKIP_HONEST("no-io-uring", "no io_uring here (the fallback is tested below)");
    make();
  }
};

// The file ends earlier than fstat said (it shrank between the two): the reader takes what
// is there, exactly as serial reads the file truncated for real.
TEST_F(UringFaults, FileThatShrankAfterFstatIsReadAsItIsNow) {
  const std::string victim = file(4);
  const uint64_t size = std::filesystem::file_size(root + "/" + victim);
  for (const uint64_t keep : {uint64_t{0}, size / 2, uint64_t{4096} + 123}) {
    for (const bool direct : {false, true}) {
      if (direct && !direct_supported()) continue;
      FaultPlan p;
      p.path_has = victim;
      p.cqe_eof_at = keep;
      Outcome got;
      {
        Faults f(p);
        LoaderConfig c = config("uring:4:2");
        c.source.direct = direct;
        got = run(index, c);
        EXPECT_GT(f.counts().cqe_faults, 0u);
      }
      // The same file really truncated, read by serial.
      const std::vector<uint8_t> bytes = test::read_bytes(root + "/" + victim);
      test::write_bytes(root + "/" + victim,
                        std::vector<uint8_t>(bytes.begin(), bytes.begin() + keep));
      const Outcome truncated = run(index, config("serial"));
      test::write_bytes(root + "/" + victim, bytes);
      EXPECT_EQ(got.checksums, truncated.checksums) << keep << (direct ? " O_DIRECT" : "");
      EXPECT_EQ(got.bad, truncated.bad) << keep << (direct ? " O_DIRECT" : "");
      EXPECT_NE(got.checksums, want.checksums) << keep << (direct ? " O_DIRECT" : "");
    }
  }
}

TEST_F(UringFaults, RefusedSubmitsAreRetried) {
  FaultPlan p;
  p.submit_refusals = 12;  // nothing taken, -EAGAIN, -EINTR, -EBUSY, three times each
  Faults f(p);
  const Outcome got = run(index, config("uring:4:2"));
  EXPECT_EQ(f.counts().submit_faults, 12u);
  EXPECT_EQ(got.checksums, want.checksums);
  EXPECT_TRUE(got.bad.empty());
}

TEST_F(UringFaults, FailedSubmitStopsTheReaderWithTheReason) {
  FaultPlan p;
  p.submit_errno = ENOMEM;
  p.submit_ok = 3;
  Faults f(p);
  Iterator it(index, config("uring:4:2"));
  it.start_epoch(0);
  try {
    while (it.next()) {
    }
    FAIL() << "an epoch ended although io_uring_submit failed";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("io_uring_submit"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Cannot allocate memory"), std::string::npos) << msg;
  }
  EXPECT_GT(f.counts().submit_faults, 0u);
}

// io_uring refused as seccomp (Docker's default profile) or an old kernel refuses it: the
// reader says so and runs as threads:T, with serial's batches.
TEST(UringFallback, WithoutIoUringTheReaderRunsAsThreadsAndSaysSo) {
  TempDir d;
  const Index index = open_index(test::make_dataset(d, GenPattern::photo, 64, 2, 7));
  const Outcome want = run(index, config("serial"));
  const bool uring = test::uring_works();
  FaultPlan p;
  p.init_errno = EPERM;
  Faults f(p);
  const Outcome got = run(index, config("uring:8:2"));
  EXPECT_EQ(got.reader, "threads:2");
  EXPECT_EQ(got.checksums, want.checksums);
  EXPECT_EQ(f.counts().cqes, 0u);  // no read went through a ring
  if (uring) {
    EXPECT_GT(f.counts().init_faults, 0u);
  }
}

// --reader auto switching to a uring candidate where io_uring is refused: no fallback there
// (a switch runs exactly the reader asked for), but an error naming the reader and why, and
// the reader before runs on with nothing lost.
TEST(UringFallback, ASwitchToUringWhereItIsRefusedIsAnErrorAndTheOldReaderRunsOn) {
  TempDir d;
  const Index index = open_index(test::make_dataset(d, GenPattern::photo, 64, 2, 7));
  Iterator serial(index, config("serial"));
  const test::EpochRecord want = test::run_epoch(serial, 0);
  FaultPlan p;
  p.init_errno = EPERM;
  Faults f(p);
  Iterator it(index, config("threads:2"));
  std::string error;
  const test::EpochRecord got = test::run_epoch_watching(it, 0, 0, [&](int n) {
    if (n != 0) return;
    try {
      it.switch_reader(parse_reader("uring:8:2"), 2);
    } catch (const Error& e) {
      error = e.what();
    }
  });
  EXPECT_EQ(error.rfind("reader uring:8:2: ", 0), 0u) << error;
  EXPECT_EQ(it.reader().text(), "threads:2");
  EXPECT_EQ(got.batch_checksums, want.batch_checksums);
  EXPECT_EQ(got.epoch_checksum, want.epoch_checksum);
}

}  // namespace
}  // namespace stoker
