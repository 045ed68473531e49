// SPDX-License-Identifier: Apache-2.0
// What only the pread source has (its faults are source_faults_test.cc's, with every other
// source's): read_file continues short and interrupted reads (io_faults.h), and the cold-cache
// switch really drops what was read from the page cache (mincore), or says which files it
// could not drop.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <tuple>

#include "common/error.h"
#include "fault_run.h"
#include "io_faults.h"
#include "loader/iterator.h"
#include "loader_test_util.h"
#include "reader_table.h"
#include "test_util.h"

namespace stoker {
namespace {

using test::FaultPlan;
using test::Faults;
using test::Outcome;
using test::run;

class PreadSource : public ::testing::Test, protected test::SourceData {
 protected:
  void SetUp() override { make(); }
};

// read_file (stoker peek, probe) continues short and interrupted reads as the sources do
// (source_faults_test.cc).
TEST_F(PreadSource, ReadFileSurvivesShortReadsAndEintr) {
  const std::string path = root + "/" + file(3);
  std::vector<uint8_t> clean, faulted;
  const std::vector<uint8_t> a(read_file(path, clean).begin(), read_file(path, clean).end());
  FaultPlan p;
  p.pread_max = 100;
  p.pread_eintr = true;
  Faults f(p);
  const auto b = read_file(path, faulted);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  EXPECT_GT(f.counts().pread_faults, a.size() / 100);
}

// ---- the cold-cache switch -------------------------------------------------------------

// Pages of `path` in the page cache, by mincore over a mapping of it.
size_t resident_pages(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const size_t size = std::filesystem::file_size(path);
  size_t resident = 0;
  if (size > 0) {
    void* m = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED) {
      const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
      std::vector<unsigned char> vec((size + page - 1) / page);
      if (mincore(m, size, vec.data()) == 0) {
        for (unsigned char v : vec) resident += v & 1;
      }
      munmap(m, size);
    }
  }
  close(fd);
  return resident;
}

size_t resident_pages(const Index& index) {
  size_t n = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    n += resident_pages(index.root + "/" + std::string(index.relative_path(i)));
  }
  return n;
}

void warm(const Index& index) {
  std::vector<uint8_t> buf;
  for (size_t i = 0; i < index.size(); ++i) {
    read_file(index.root + "/" + std::string(index.relative_path(i)), buf);
  }
}

TEST_F(PreadSource, EvictionReallyEmptiesThePageCache) {
  warm(index);
  ASSERT_GT(resident_pages(index), index.size()) << "reading did not fill the page cache";
  EXPECT_EQ(evict_from_page_cache(index), 0u);
  EXPECT_EQ(resident_pages(index), 0u);
  // --cold also drops each file right after it is read, whatever the reader and source: every
  // reader of the suite's table over the source it resolves to (uring readers: io_uring, or
  // pread where they fall back to threads:T). Not ReaderSuite rows: it measures this
  // fixture's page cache, which the suite does not own.
  for (const char* reader : suite::kReaders) {
    LoaderConfig c = test::source_config(reader);
    c.source.kind = SourceOptions::Kind::automatic;
    c.source.evict_after_read = true;
    warm(index);
    const Outcome got = run(index, c);
    EXPECT_EQ(got.checksums, want.checksums) << reader;
    EXPECT_EQ(resident_pages(index), 0u) << reader << ": pages left in the page cache";
  }
}

// Where pages cannot be dropped (tmpfs keeps files only in memory), eviction reports the
// files it could not empty: a --cold run there is not cold, and says so.
TEST(ColdCache, FilesThatStayCachedAreReportedAsNotEvicted) {
  std::error_code ec;
  if (!std::filesystem::is_directory("/dev/shm", ec))
    STOKER_SKIP_IF_OPTIONAL("no /dev/shm (tmpfs)");
  const std::string base = "/dev/shm/stoker-cold-test-" + std::to_string(getpid());
  std::filesystem::create_directories(base + "/c0");
  for (int i = 0; i < 3; ++i) {
    test::write_bytes(base + "/c0/" + std::to_string(i) + ".jpg", std::vector<uint8_t>(10000, 1));
  }
  const Index index = open_index(base);
  EXPECT_EQ(evict_from_page_cache(index), 3u);
  std::filesystem::remove_all(base, ec);
}

}  // namespace
}  // namespace stoker
