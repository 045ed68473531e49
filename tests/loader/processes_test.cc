// SPDX-License-Identifier: Apache-2.0
// processes:N end to end: the same batches as serial for any N (its bad-sample list against
// serial's: reader_suite_test.cc), a worker killed with SIGKILL replaced without a trace in
// the data, a poisonous file that crashes every worker reported as bad after one retry, a
// stuck worker killed after the time-out, nothing left in /dev/shm or the process table, and
// worker memory that does not grow with the index. Recovery: a worker that exits, hangs or
// answers wrongly at start-up, a replacement that cannot start, a worker lost holding several
// requests, and a worker that crashes on everything ending in "too many replacements" rather
// than a loop. The crash, hang and die-holding behaviours come from stoker-worker's test
// hooks; the broken start-ups from small scripts given as STOKER_WORKER.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

#include "common/clock.h"
#include "common/error.h"
#include "loader/iterator.h"
#include "loader/process_pool/process_pool_spawn.h"
#include "loader_test_util.h"
#include "test_util.h"
#include "tools/gen/gen_dataset.h"

namespace stoker {
namespace {

using test::TempDir;

using test::EpochRecord;
using test::make_dataset;
using test::run_epoch;

void expect_same(const std::vector<EpochRecord>& a, const std::vector<EpochRecord>& b,
                 const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t e = 0; e < a.size(); ++e) {
    EXPECT_EQ(a[e].epoch_checksum, b[e].epoch_checksum) << what << " epoch " << e;
    EXPECT_EQ(a[e].batch_checksums, b[e].batch_checksums) << what << " epoch " << e;
    EXPECT_TRUE(a[e].bytes == b[e].bytes) << what << " epoch " << e;
  }
}

LoaderConfig config_for(const std::string& reader, size_t batch = 8) {
  LoaderConfig c;
  c.reader = parse_reader(reader);
  c.sampler.batch_size = batch;
  c.sampler.seed = 17;
  c.transform.size = 48;
  c.prefetch = 3;
  c.warn = false;
  return c;
}

// Sets an environment variable for a scope; workers inherit it when they are spawned.
struct ScopedEnv {
  ScopedEnv(const char* name, const std::string& value) : name(name) {
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { unsetenv(name); }
  const char* name;
};

// Live (not zombie) stoker-worker children of this process, from /proc.
std::vector<pid_t> worker_pids() {
  std::vector<pid_t> pids;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t close = line.rfind(')');
    if (close == std::string::npos || line.find("(stoker-worker)") == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid() &&
        state != 'Z') {
      pids.push_back(std::stoi(name));
    }
  }
  return pids;
}

// Entries of /dev/shm named after stoker. The loader's shared memory is memfds (named
// stoker-index, stoker-batches) that die with their last holder, so none should ever appear;
// other entries belong to whatever else runs on the machine (ctest -j, other users) and would
// make a whole-directory comparison flaky.
std::set<std::string> dev_shm() {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = e.path().filename();
    if (name.find("stoker") != std::string::npos) names.insert(name);
  }
  return names;
}

// A field of /proc/PID/status in bytes ("RssAnon", "RssShmem").
uint64_t status_bytes(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  uint64_t kb = 0;
  while (in >> key) {
    if (key == field + ":" && in >> kb) return kb * 1024;
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

using BadList = std::vector<std::tuple<uint32_t, std::string, std::string>>;

BadList sorted_bad(const Iterator& it) {
  BadList out;
  for (const BadSample& s : it.bad_samples().list()) out.emplace_back(s.index, s.path, s.reason);
  std::sort(out.begin(), out.end());
  return out;
}

TEST(Processes, SameBatchesAsSerialForOneAndThreeWorkers) {
  TempDir d;
  const Index index = open_index(make_dataset(d, GenPattern::photo, 96, 3, 15));
  Iterator serial(index, config_for("serial"));
  const std::vector<EpochRecord> want = {run_epoch(serial, 0), run_epoch(serial, 1)};
  // Worker counts the suite's processes:2 row does not reach, with the pool's exact size.
  for (const char* reader : {"processes:1", "processes:3"}) {
    Iterator it(index, config_for(reader));
    expect_same({run_epoch(it, 0), run_epoch(it, 1)}, want, reader);
    EXPECT_EQ(it.pool_bytes(), 4 * ((8 * 3 * 48 * 48 * 4 + 4095) / 4096 * 4096));
  }
  // Resuming after two batches continues with exactly the same ones.
  Iterator resumed(index, config_for("processes:2"));
  resumed.start_epoch(1, 16);
  for (size_t b = 2; const Batch* batch = resumed.next(); ++b) {
    EXPECT_EQ(batch->checksum, want[1].batch_checksums.at(b));
  }
  // u8 / nhwc and the read-only path too.
  LoaderConfig c = config_for("serial");
  c.output.dtype = DType::u8;
  c.output.layout = Layout::nhwc;
  for (bool no_decode : {false, true}) {
    c.no_decode = no_decode;
    c.reader = parse_reader("serial");
    Iterator s(index, c);
    c.reader = parse_reader("processes:2");
    Iterator p(index, c);
    expect_same({run_epoch(p, 4)}, {run_epoch(s, 4)}, no_decode ? "no_decode" : "u8 nhwc");
  }
}

class ProcessesBad : public ::testing::Test {
 protected:
  void SetUp() override {
    root = make_dataset(dir, GenPattern::index, 64, 3, 12);
    const auto good = test::read_bytes(root + "/class_000/img_000000.jpg");
    auto half = good;
    half.resize(half.size() / 2);
    test::write_bytes(root + "/class_000/img_000100.jpg", half);
    test::write_bytes(root + "/class_001/img_000100.jpg", {});
    test::write_text(root + "/class_002/img_000100.jpg", "not an image at all\n");
  }
  TempDir dir;
  std::string root;
};

TEST_F(ProcessesBad, FailStopsWithAnErrorNamingTheFile) {
  const Index index = open_index(root);
  LoaderConfig c = config_for("processes:2", 7);
  c.on_error = ErrorPolicy::fail;
  Iterator it(index, c);
  it.start_epoch(0);
  try {
    while (it.next()) {
    }
    FAIL() << "no error under --on-error fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("img_0001"), std::string::npos) << e.what();
  }
}

TEST(Processes, KilledWorkerIsReplacedAndBatchesStayIdentical) {
  TempDir d;
  const Index index = open_index(make_dataset(d, GenPattern::photo, 160, 3, 20));
  Iterator serial(index, config_for("serial"));
  const std::vector<EpochRecord> want = {run_epoch(serial, 0), run_epoch(serial, 1)};
  const LoaderConfig config = config_for("processes:2");
  Iterator it(index, config);
  // The second kill of an epoch comes once every batch in flight at the first has been taken.
  // The first one's sample is retried; it lies in one of the pool's prefetch + 1 batches, and
  // killing the worker retrying it would make it crash twice, which the poison rule rightly
  // reports bad (seen under load when batch 3 was in flight at the first kill).
  const int second_kill = static_cast<int>(config.prefetch) + 1;
  std::set<pid_t> killed;
  auto kill_one = [&](int batch) {
    if (batch != -1 && batch != second_kill) return;
    // Two live workers, neither one killed before: under load a killed worker can take a
    // while to exit (its socket, and so the parent's notice, goes only when it has).
    std::vector<pid_t> pids;
    for (int i = 0; i < 1000; ++i) {
      pids = worker_pids();
      std::erase_if(pids, [&](pid_t p) { return killed.count(p) > 0; });
      if (pids.size() == 2) break;
      usleep(10'000);
    }
    ASSERT_EQ(pids.size(), 2u);
    ASSERT_EQ(kill(pids[0], SIGKILL), 0);
    killed.insert(pids[0]);
  };
  expect_same(
      {test::run_epoch_watching(it, 0, 0, kill_one), test::run_epoch_watching(it, 1, 0, kill_one)},
      want, "after kill -9");
  EXPECT_EQ(killed.size(), 4u);
  EXPECT_EQ(it.bad_samples().count(), 0u);
  // Two live replacements; the killed ones gone (given up to 10 s to exit under load).
  std::vector<pid_t> now;
  for (int i = 0; i < 1000; ++i) {
    now = worker_pids();
    if (now.size() == 2 &&
        std::none_of(now.begin(), now.end(), [&](pid_t p) { return killed.count(p) > 0; })) {
      break;
    }
    usleep(10'000);
  }
  EXPECT_EQ(now.size(), 2u);
  for (pid_t p : now) EXPECT_EQ(killed.count(p), 0u);
}

TEST(Processes, PoisonSampleIsRetriedOnceThenReportedBad) {
  TempDir d;
  const std::string root = make_dataset(d, GenPattern::photo, 64, 3, 10);
  const Index index = open_index(root);
  const std::string poison = "class_001/img_000003.jpg";
  std::vector<EpochRecord> got;
  BadList bad;
  {
    ScopedEnv crash("STOKER_WORKER_CRASH_ON", poison);
    LoaderConfig c = config_for("processes:2", 5);
    Iterator it(index, c);
    got = {run_epoch(it, 0), run_epoch(it, 1)};
    bad = sorted_bad(it);
    c.on_error = ErrorPolicy::fail;
    Iterator failing(index, c);
    failing.start_epoch(0);
    try {
      while (failing.next()) {
      }
      FAIL() << "no error under --on-error fail";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(poison), std::string::npos) << e.what();
    }
  }
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(std::get<1>(bad[0]), root + "/" + poison);
  EXPECT_NE(std::get<2>(bad[0]).find("crashed twice"), std::string::npos) << std::get<2>(bad[0]);
  EXPECT_NE(std::get<2>(bad[0]).find("signal 6"), std::string::npos) << std::get<2>(bad[0]);
  // Serial, with the same file made unreadable, replaces it by the same samples.
  test::write_text(root + "/" + poison, "junk");
  Iterator serial(index, config_for("serial", 5));
  expect_same(got, {run_epoch(serial, 0), run_epoch(serial, 1)}, "poison");
}

TEST(Processes, StuckWorkerIsKilledAfterTheTimeout) {
  TempDir d;
  const Index index = open_index(make_dataset(d, GenPattern::index, 48, 2, 6));
  ScopedEnv hang("STOKER_WORKER_HANG_ON", "class_000/img_000002.jpg");
  ScopedEnv timeout("STOKER_WORKER_SAMPLE_TIMEOUT_S", "1");
  Iterator it(index, config_for("processes:2", 4));
  const int64_t t0 = now_ns();
  run_epoch(it, 0);
  EXPECT_LT(now_ns() - t0, 20'000'000'000);
  const BadList bad = sorted_bad(it);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_NE(std::get<2>(bad[0]).find("no answer in 1 s"), std::string::npos) << std::get<2>(bad[0]);
}

TEST(Processes, NothingLeftInDevShmOrTheProcessTable) {
  TempDir d;
  const Index index = open_index(make_dataset(d, GenPattern::photo, 64, 2, 10));
  const std::set<std::string> shm_before = dev_shm();
  {
    Iterator it(index, config_for("processes:3"));
    it.start_epoch(0);
    ASSERT_NE(it.next(), nullptr);
    EXPECT_EQ(worker_pids().size(), 3u);
    EXPECT_EQ(dev_shm(), shm_before);
    // Destroyed mid-epoch, with batches in flight.
  }
  EXPECT_TRUE(worker_pids().empty());
  EXPECT_EQ(dev_shm(), shm_before);
}

TEST(Processes, MissingWorkerBinaryIsAClearError) {
  TempDir d;
  const Index index = open_index(make_dataset(d, GenPattern::index, 48, 1, 4));
  ScopedEnv env("STOKER_WORKER", d / "no-such-worker");
  try {
    Iterator it(index, config_for("processes:2"));
    FAIL() << "no error without a worker binary";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-worker"), std::string::npos) << e.what();
  }
}

// --source null --null-file: the path reaches the workers through the wire form of the
// source options (a fixed char array); a path too long for it is refused naming it, never cut
// short into another path.
TEST(Processes, NullFileReachesTheWorkersAndTooLongAPathIsAClearError) {
  TempDir d;
  const std::string root = make_dataset(d, GenPattern::photo, 64, 2, 4);
  const Index index = open_index(root);
  LoaderConfig c = config_for("serial");
  c.source.kind = SourceOptions::Kind::null;
  c.source.null_file = root + "/class_001/img_000000.jpg";
  Iterator serial(index, c);
  const EpochRecord want = run_epoch(serial, 0);
  LoaderConfig builtin = c;
  builtin.source.null_file.clear();
  Iterator other(index, builtin);
  ASSERT_NE(run_epoch(other, 0).epoch_checksum, want.epoch_checksum) << "the file is not served";
  c.reader = parse_reader("processes:2");
  Iterator it(index, c);
  expect_same({run_epoch(it, 0)}, {want}, "processes:2 --null-file");
  // The same file by a 301-byte path ("./" repeated): the parent's own source reads it.
  std::string dots;
  for (int i = 0; i < 130; ++i) dots += "./";
  c.source.null_file = root + "/" + dots + "class_001/img_000000.jpg";
  try {
    Iterator too_long(index, c);
    FAIL() << "a " << c.source.null_file.size() << "-byte --null-file reached the workers";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("at most 255 bytes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(dots), std::string::npos) << e.what();
  }
}

// A worker reads paths in place from the shared index: its private memory is the same for
// 40 samples and for 300 000.
TEST(Processes, WorkerMemoryDoesNotGrowWithTheIndex) {
  TempDir d;
  const std::string root = make_dataset(d, GenPattern::index, 48, 1, 1);
  const uint64_t size = std::filesystem::file_size(root + "/class_000/img_000000.jpg");
  std::vector<uint64_t> anon;
  for (size_t n : {40, 300'000}) {
    Index index;
    index.root = root;
    index.classes = {"class_000"};
    for (size_t i = 0; i < n; ++i) index.add("class_000/./././img_000000.jpg", size, 0);
    LoaderConfig c = config_for("processes:1", 64);
    c.no_decode = true;
    Iterator it(index, c);
    it.start_epoch(0);
    for (int b = 0; b < 20 && it.next(); ++b) {
    }
    const std::vector<pid_t> pids = worker_pids();
    ASSERT_EQ(pids.size(), 1u);
    anon.push_back(status_bytes(pids[0], "RssAnon"));
  }
  EXPECT_LT(anon[1], anon[0] + (1 << 20))
      << "a 300 000-entry index (11 MB) made the worker's "
      << "private memory grow from " << anon[0] << " to " << anon[1] << " bytes";
}

// ---- recovery ---------------------------------------------------------------------------

// Fails the test process, naming `what`, if the scope is still running after `seconds`: a
// recovery bug shows as a hang, which must fail here and not after ctest's time-out.
class Watchdog {
 public:
  Watchdog(std::string what, int seconds) : what_(std::move(what)) {
    thread_ = std::thread([this, seconds] {
      std::unique_lock lock(mu_);
      if (!cv_.wait_for(lock, std::chrono::seconds(seconds), [&] { return done_; })) {
        std::fprintf(stderr, "FAILED: %s still running after %d s (a hang)\n", what_.c_str(),
                     seconds);
        std::_Exit(1);
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  std::string what_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// An executable shell script at `path`.
void write_script(const std::string& path, const std::string& body) {
  test::write_text(path, "#!/bin/sh\n" + body + "\n");
  chmod(path.c_str(), 0755);
}

// The message of the stoker::Error that constructing or running `reader` throws.
std::string error_of(const Index& index, const LoaderConfig& c) {
  try {
    Iterator it(index, c);
    for (uint64_t e = 0; e < 2; ++e) {
      it.start_epoch(e);
      while (it.next()) {
      }
    }
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// "(pid N)" in a message: the process must be gone (reaped, not a zombie of ours).
void expect_reaped(const std::string& msg) {
  const size_t at = msg.find("(pid ");
  ASSERT_NE(at, std::string::npos) << msg;
  const pid_t pid = std::atoi(msg.c_str() + at + 5);
  EXPECT_FALSE(std::filesystem::exists("/proc/" + std::to_string(pid))) << msg;
}

class ProcessesRecovery : public ::testing::Test {
 protected:
  void SetUp() override {
    index = open_index(make_dataset(dir, GenPattern::photo, 64, 3, 8));
    real_worker = find_worker_binary();
  }
  TempDir dir;
  Index index;
  std::string real_worker;
};

TEST_F(ProcessesRecovery, WorkerThatExitsAtStartUpIsAClearError) {
  write_script(dir / "exits", "echo 'worker: cannot start' >&2; exit 3");
  ScopedEnv env("STOKER_WORKER", dir / "exits");
  Watchdog w("a worker exiting at start-up", 60);
  const std::string msg = error_of(index, config_for("processes:2"));
  EXPECT_NE(msg.find("exited during start-up (exit status 3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir / "exits"), std::string::npos) << msg;
  expect_reaped(msg);
  EXPECT_TRUE(worker_pids().empty());
}

TEST_F(ProcessesRecovery, WorkerThatHangsAtStartUpIsKilledAfterTheTimeout) {
  write_script(dir / "hangs", "exec sleep 60");
  ScopedEnv env("STOKER_WORKER", dir / "hangs");
  ScopedEnv timeout("STOKER_WORKER_STARTUP_TIMEOUT_S", "1");
  Watchdog w("a worker hanging at start-up", 30);
  const int64_t t0 = now_ns();
  const std::string msg = error_of(index, config_for("processes:1"));
  EXPECT_LT(now_ns() - t0, 15'000'000'000);
  EXPECT_NE(msg.find("did not finish start-up within 1 s; killed it"), std::string::npos) << msg;
  expect_reaped(msg);
}

TEST_F(ProcessesRecovery, WorkerFromAnotherBuildIsRefused) {
  write_script(dir / "other", "printf 'hello' >&3; exec sleep 60");
  ScopedEnv env("STOKER_WORKER", dir / "other");
  Watchdog w("a worker answering wrongly", 30);
  const std::string msg = error_of(index, config_for("processes:1"));
  EXPECT_NE(msg.find("from another build"), std::string::npos) << msg;
}

// Two workers start; one is killed mid-epoch and its replacement cannot start: the run stops
// with the replacement's failure, no hang, nothing left behind.
TEST_F(ProcessesRecovery, ReplacementThatCannotStartStopsTheRunNamingIt) {
  write_script(dir / "twice", "if mkdir '" + dir / "t1" + "' 2>/dev/null || mkdir '" + dir / "t2" +
                                  "' 2>/dev/null; then exec '" + real_worker +
                                  "' \"$@\"; fi\necho 'no more workers' >&2; exit 4");
  ScopedEnv env("STOKER_WORKER", dir / "twice");
  Watchdog w("a replacement failing to start", 60);
  const std::set<std::string> shm_before = dev_shm();
  {
    Iterator it(index, config_for("processes:2", 4));
    it.start_epoch(0);
    ASSERT_NE(it.next(), nullptr);
    const std::vector<pid_t> pids = worker_pids();
    ASSERT_EQ(pids.size(), 2u);
    ASSERT_EQ(kill(pids[0], SIGKILL), 0);
    try {
      while (it.next()) {
      }
      FAIL() << "the epoch ended although no replacement could start";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("exited during start-up (exit status 4)"),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_TRUE(worker_pids().empty());
  EXPECT_EQ(dev_shm(), shm_before);
}

// The one worker that takes the token reads 5 requests and dies answering none: the one it
// was on is retried, the four queued behind it are sent again, and the batches are serial's.
TEST_F(ProcessesRecovery, WorkerLostHoldingSeveralRequestsChangesNothing) {
  Iterator serial(index, config_for("serial", 6));
  const std::vector<EpochRecord> want = {run_epoch(serial, 0), run_epoch(serial, 1)};
  test::write_text(dir / "token", "");
  ScopedEnv env("STOKER_WORKER_DIE_HOLDING", "5:" + dir / "token");
  Watchdog w("a worker lost holding requests", 60);
  Iterator it(index, config_for("processes:2", 6));
  expect_same({run_epoch(it, 0), run_epoch(it, 1)}, want, "after a worker died holding 5");
  EXPECT_FALSE(std::filesystem::exists(dir / "token")) << "no worker took the token";
  EXPECT_EQ(it.bad_samples().count(), 0u);
}

// Workers that crash on every sample: each sample is retried once then reported bad, each
// crash replaced, until max_replacements + 1 in a row failed: then a clear error, not a loop.
TEST_F(ProcessesRecovery, CrashingOnEverySampleEndsWithTooManyReplacements) {
  ScopedEnv crash("STOKER_WORKER_CRASH_ON", "img_");
  Watchdog w("workers crashing on every sample", 60);
  // One sample per batch, one batch ahead: a handful of crashes, not hundreds.
  LoaderConfig c = config_for("processes:1", 1);
  c.prefetch = 1;
  c.max_replacements = 2;
  const std::string msg = error_of(index, c);
  EXPECT_NE(msg.find("3 samples in a row failed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("crashed twice"), std::string::npos) << msg;
  EXPECT_TRUE(worker_pids().empty());
}

}  // namespace
}  // namespace stoker
