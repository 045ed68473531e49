// SPDX-License-Identifier: Apache-2.0
// uring:QD:T specifics: io_uring really runs where the kernel has it (the reader did not
// fall back to threads:T, and a ring was open while it read); O_DIRECT gives serial's
// batches; read-only mode hashes the files themselves; files gone after indexing are
// handled as by serial. Same batches as serial for any QD and T, clean and corrupted:
// reader_suite_test.cc; error paths under injected faults and the forced fallback:
// source_uring_test.cc.
#include <fcntl.h>
#include <linux/io_uring.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <set>

#include "common/error.h"
#include "loader/iterator.h"
#include "test_util.h"
#include "tools/gen/gen_dataset.h"

namespace stoker {
namespace {

using test::TempDir;

struct RunResult {
  std::vector<uint64_t> epoch_checksums;
  std::vector<std::vector<uint8_t>> bytes;
  uint64_t bytes_read = 0;
  std::set<std::string> bad;
  std::string reader;      // the reader that ran
  bool ring_seen = false;  // an io_uring descriptor was open while batches arrived
};

// Why this kernel refuses io_uring (seccomp, an old kernel, sysctl io_uring_disabled), or
// empty when it accepts a ring.
std::string kernel_refuses_uring() {
  io_uring_params p{};
  const long fd = syscall(__NR_io_uring_setup, 4, &p);
  if (fd < 0) return std::string("io_uring_setup: ") + std::strerror(errno);
  close(static_cast<int>(fd));
  return {};
}

bool build_has_uring() {
  try {
    make_uring_source({});
    return true;
  } catch (const Error& e) {
    return std::string(e.what()).find("liburing was not found") == std::string::npos;
  }
}

bool io_uring_fd_open() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    std::error_code ec2;
    if (std::filesystem::read_symlink(e.path(), ec2).string() == "anon_inode:[io_uring]") {
      return true;
    }
  }
  return false;
}

RunResult run(const Index& index, LoaderConfig c, int epochs = 2) {
  Iterator it(index, c);
  RunResult r;
  r.reader = it.reader().text();
  for (int e = 0; e < epochs; ++e) {
    it.start_epoch(static_cast<uint64_t>(e));
    while (const Batch* b = it.next()) {
      r.ring_seen = r.ring_seen || io_uring_fd_open();
      const auto* p = static_cast<const uint8_t*>(b->data);
      r.bytes.emplace_back(p, p + b->bytes());
      for (size_t i = 0; i < b->size; ++i) r.bytes_read += b->timing[i].bytes;
    }
    r.epoch_checksums.push_back(it.epoch_checksum());
  }
  for (const BadSample& s : it.bad_samples().list()) r.bad.insert(s.path);
  return r;
}

LoaderConfig config(const std::string& reader) {
  LoaderConfig c;
  c.reader = parse_reader(reader);
  c.sampler.batch_size = 6;
  c.sampler.seed = 4;
  c.transform.size = 40;
  c.prefetch = 2;
  c.warn = false;
  return c;
}

class Uring : public ::testing::Test {
 protected:
  void SetUp() override {
    GenConfig g;
    g.out = dir / "data";
    g.sizes = {120};
    g.classes = 3;
    g.per_class = 11;
    g.progress = false;
    root = generate_dataset(g).roots.at(0);
  }
  bool direct_supported() {
    const int fd = open((root + "/class_000/img_000000.jpg").c_str(), O_RDONLY | O_DIRECT);
    if (fd >= 0) close(fd);
    return fd >= 0;
  }
  TempDir dir;
  std::string root;
};

// Where the kernel accepts io_uring, uring:QD:T runs on it: the tests comparing it with
// serial would pass on the threads:T fallback too, so this one fails if it fell back.
TEST_F(Uring, IoUringRunsWhereTheKernelHasIt) {
  if (!build_has_uring()) STOKER_SKIP_IF_OPTIONAL("this build has no liburing (liburing-dev)");
  const std::string refused = kernel_refuses_uring();
  if (!refused.empty())
    STOKER_SKIP_HONEST("no-io-uring", "the kernel refuses io_uring here (" << refused << ")");
  const Index index = open_index(root);
  EXPECT_FALSE(io_uring_fd_open());
  const RunResult u = run(index, config("uring:8:2"), 1);
  EXPECT_EQ(u.reader, "uring:8:2");
  EXPECT_TRUE(u.ring_seen) << "no io_uring descriptor was open while the reader ran";
  EXPECT_EQ(u.epoch_checksums, run(index, config("serial"), 1).epoch_checksums);
}

TEST_F(Uring, DirectIoGivesTheSameBatches) {
  if (!direct_supported())
    STOKER_SKIP_HONEST("no-o-direct", "O_DIRECT is not supported on " << dir.path());
  const Index index = open_index(root);
  const RunResult serial = run(index, config("serial"), 1);
  LoaderConfig c = config("uring:8:2");
  c.source.direct = true;
  const RunResult u = run(index, c, 1);
  EXPECT_EQ(u.epoch_checksums, serial.epoch_checksums);
  EXPECT_EQ(u.bytes_read, index.total_bytes());  // sizes not multiples of 4 KiB read exactly
}

TEST_F(Uring, ReadOnlyModeHashesTheFiles) {
  const Index index = open_index(root);
  LoaderConfig c = config("serial");
  c.no_decode = true;
  const RunResult serial = run(index, c, 1);
  c.reader = parse_reader("uring:16:2");
  const RunResult u = run(index, c, 1);
  EXPECT_EQ(u.epoch_checksums, serial.epoch_checksums);
  EXPECT_EQ(u.bytes_read, index.total_bytes());
}

TEST_F(Uring, BadFilesAreSkippedLikeSerial) {
  test::write_text(root + "/class_001/zz_text.jpg", "not an image");
  test::write_bytes(root + "/class_002/zz_empty.jpg", {});
  const Index index = open_index(root);
  std::filesystem::remove(root + "/class_000/img_000003.jpg");  // gone after indexing
  const RunResult serial = run(index, config("serial"));
  const RunResult u = run(index, config("uring:8:2"));
  EXPECT_EQ(serial.bad.size(), 3u);
  EXPECT_EQ(u.bad, serial.bad);
  EXPECT_EQ(u.epoch_checksums, serial.epoch_checksums);
}

TEST(ReaderPolicyUring, Parses) {
  const ReaderSpec p = parse_reader("uring:32:2");
  EXPECT_EQ(p.kind, ReaderSpec::Kind::uring);
  EXPECT_EQ(p.queue_depth, 32);
  EXPECT_EQ(p.threads, 2);
  EXPECT_EQ(parse_reader("uring:8").queue_depth, 8);
  EXPECT_ERROR("uring:0", parse_reader("uring:0"));
  EXPECT_ERROR("'uring'", parse_reader("uring"));
}

}  // namespace
}  // namespace stoker
