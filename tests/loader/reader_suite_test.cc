// SPDX-License-Identifier: Apache-2.0
// One conformance suite for every (reader, source) pair this build has: the same epoch
// checksum as `serial` on clean data and on a heavily corrupted set (and the same bad-file
// list and replacement count, run after run), the bad-file policy, exact resume mid-epoch,
// and reader failures reaching next(). A pair the reader cannot use (a reader that needs an
// asynchronous source, over a synchronous one) is refused naming both instead. A new reader
// or source is one line in a table below.
// NFS rows read through a real NFS-Ganesha on 127.0.0.1 (started once per test process;
// skipped with the reason only where it cannot run, see nfs_server.h).
// Order and labels (images that encode their index), the memory hook, retain/release and the
// bad-input matrix (each bad file replaced, listed once, named with its reason; files that
// go bad after indexing) are suite tests too. Reader-specific behaviour (worker crashes,
// O_DIRECT, pinning) stays in its own test file.
#include <algorithm>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <random>
#include <set>
#include <tuple>

#include "common/error.h"
#include "loader/iterator.h"
#include "loader_test_util.h"
#include "nfs_server.h"
#include "test_util.h"
#include "tools/gen/gen_dataset.h"
#include "tools/pack/pack_shards.h"

namespace stoker {
namespace {

using test::TempDir;
using test::uring_works;

// ---- the tables: add a reader or a source here ------------------------------------------

const char* const kReaders[] = {"serial",      "threads:1", "threads:3",
                                "processes:2", "uring:4:2", "uring:16:3"};

// A dataset as a source row reads it, and the local copy of the same samples (same order,
// same bytes) that the serial reference runs on with pread: a URL cannot be read by pread.
struct Prepared {
  std::string dataset;  // a path or an nfs:// URL; empty: skipped (see the skip reason)
  std::string local;
};

struct SourceCase {
  const char* name;
  SourceOptions::Kind kind;
  // The dataset as this source reads it, made from a local ImageFolder tree (pack it into
  // shards, serve it over NFS, ...); empty with *skip set when it cannot here.
  Prepared (*prepare)(const std::string& tree, const TempDir& scratch, std::string* skip);
  // Reads the real files (compared with serial over pread on Prepared::local), or serves its
  // own bytes (null: compared with serial over the same source).
  bool reads_files;
  // What a reader that needs an asynchronous source (uring:QD) gets from this row: an
  // asynchronous source (auto resolves to one), or a synchronous one it must refuse.
  bool serves_submitters;
};

Prepared same_tree(const std::string& tree, const TempDir&, std::string*) {
  return {tree, tree};
}

// The tree through io_uring, named: where the kernel or the build has none, nothing to run.
Prepared uring_tree(const std::string& tree, const TempDir&, std::string* skip) {
  if (uring_works()) return {tree, tree};
  *skip = "no io_uring here (old kernel, seccomp, or a build without liburing-dev)";
  return {};
}

// The tree packed into several small tar shards (stoker pack), read by offset.
std::string pack(const std::string& tree, const std::string& out) {
  PackConfig p;
  p.data = tree;
  p.out = out;
  p.shard_size = 64 * 1024;
  p.progress = false;
  pack_shards(p);
  return p.out;
}

Prepared packed(const std::string& tree, const TempDir& scratch, std::string*) {
  const std::string out = pack(tree, scratch / "shards");
  return {out, out};
}

// One NFS-Ganesha per test process, exporting a folder that the NFS rows copy (or pack)
// each dataset into once; stopped at exit (statics die in reverse order: server, then folder).
struct NfsExport {
  TempDir dir;
  test::NfsServer server{dir.path()};
};
const NfsExport& nfs_export() {
  static const NfsExport e;
  return e;
}

// `tree` copied (as files, or packed into shards) below the export: {its URL, local copy}.
Prepared served(const std::string& tree, bool shards, std::string* skip) {
#if STOKER_HAVE_NFS
  const test::NfsServer& server = nfs_export().server;
  if (!server.ok()) {
    if (server.skip_reason().empty()) fail("{}", server.error());  // must run (CI)
    *skip = server.skip_reason();
    return {};
  }
  static std::map<std::string, Prepared> copies;  // (tree, shards) -> prepared
  const std::string key = tree + (shards ? "#shards" : "");
  auto it = copies.find(key);
  if (it == copies.end()) {
    const std::string rel = std::to_string(copies.size());
    const std::string local = nfs_export().dir / rel;
    if (shards) {
      pack(tree, local);
    } else {
      std::filesystem::copy(tree, local, std::filesystem::copy_options::recursive);
    }
    it = copies.emplace(key, Prepared{server.url_of(rel), local}).first;
  }
  return it->second;
#else
  (void)tree, (void)shards;
  *skip = "this build has no NFS client (libnfs-dev)";
  return {};
#endif
}

Prepared nfs_files(const std::string& tree, const TempDir&, std::string* skip) {
  return served(tree, false, skip);
}
Prepared nfs_shards(const std::string& tree, const TempDir&, std::string* skip) {
  return served(tree, true, skip);
}

const SourceCase kSources[] = {
    {"auto", SourceOptions::Kind::automatic, same_tree, true, true},
    {"pread", SourceOptions::Kind::pread, same_tree, true, false},
    {"uring", SourceOptions::Kind::uring, uring_tree, true, true},
    {"null", SourceOptions::Kind::null, same_tree, false, true},
    {"shards", SourceOptions::Kind::automatic, packed, true, true},
    {"nfs", SourceOptions::Kind::automatic, nfs_files, true, true},
    {"nfs_shards", SourceOptions::Kind::automatic, nfs_shards, true, true},
};

// ---- datasets ---------------------------------------------------------------------------

// Real photographs (Debian's opencv-doc) copied into 4 classes, 120 files; a seeded 40% of
// them damaged by byte flips, a deleted run of bytes, or truncation. Some damaged files
// still decode, some fail only for some crops: the hard case for a deterministic policy.
struct Corrupted {
  std::string root;
  size_t damaged = 0;
};

const Corrupted& corrupted_set() {
  static TempDir dir;
  static const Corrupted set = [] {
    Corrupted c;
    const std::string folder = "/usr/share/doc/opencv-doc/examples/data";
    std::vector<std::string> photos;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(folder, ec)) {
      if (e.path().extension() == ".jpg" && e.file_size() < 64 * 1024) photos.push_back(e.path());
    }
    std::sort(photos.begin(), photos.end());
    if (photos.size() < 8) return c;
    c.root = dir / "photos";
    std::mt19937_64 rng(20261123);
    for (int i = 0; i < 120; ++i) {
      const std::string cls = c.root + "/c" + std::to_string(i % 4);
      std::filesystem::create_directories(cls);
      std::vector<uint8_t> bytes = test::read_bytes(photos[static_cast<size_t>(i) % photos.size()]);
      if (i == 5 || i == 6) {  // an empty file, and text where a JPEG should be
        ++c.damaged;
        bytes = i == 5 ? std::vector<uint8_t>{} : std::vector<uint8_t>{'n', 'o', 't', '\n'};
      } else if (rng() % 100 < 40) {
        ++c.damaged;
        const size_t n = bytes.size();
        switch (rng() % 3) {
          case 0:  // byte flips in the entropy-coded data
            for (int f = 0; f < 8; ++f) bytes[n / 4 + rng() % (n * 3 / 4)] ^= 1 + rng() % 255;
            break;
          case 1: {  // a run of bytes deleted
            const size_t at = n / 5 + rng() % (n / 2), len = 16 + rng() % 512;
            bytes.erase(bytes.begin() + static_cast<ptrdiff_t>(at),
                        bytes.begin() + static_cast<ptrdiff_t>(std::min(n, at + len)));
            break;
          }
          default:  // truncated
            bytes.resize(rng() % (n * 3 / 4));
            break;
        }
      }
      test::write_bytes(cls + "/" + std::to_string(i) + ".jpg", bytes);
    }
    return c;
  }();
  return set;
}

const std::string& clean_set() {
  static TempDir dir;
  static const std::string root = test::make_dataset(dir, GenPattern::photo, 64, 3, 13);
  return root;
}

// Images that encode their own index in their colour (GenPattern::index): order and labels
// are checkable, sample by sample.
constexpr int kIndexClasses = 4, kIndexPerClass = 13;
const std::string& index_set() {
  static TempDir dir;
  static const std::string root =
      test::make_dataset(dir, GenPattern::index, 64, kIndexClasses, kIndexPerClass);
  return root;
}

// ---- running ----------------------------------------------------------------------------

LoaderConfig config(const std::string& reader, SourceOptions::Kind source) {
  LoaderConfig c;
  c.reader = parse_reader(reader);
  c.source.kind = source;
  c.sampler.batch_size = 8;
  c.sampler.seed = 7;
  c.transform.size = 32;
  c.prefetch = 2;
  c.warn = false;
  return c;
}

// What must be equal between runs and readers: per-epoch checksums, bad files (index, path
// and reason, both relative to the dataset's root, so that a URL and a local path compare),
// replacements.
struct Outcome {
  std::vector<uint64_t> checksums;
  std::vector<std::tuple<uint32_t, std::string, std::string>> bad;
  uint64_t replacements = 0;
  bool operator==(const Outcome&) const = default;
};

Outcome run(const Index& index, const LoaderConfig& c, int epochs = 2) {
  Iterator it(index, c);
  Outcome o;
  for (int e = 0; e < epochs; ++e) {
    it.start_epoch(static_cast<uint64_t>(e));
    while (it.next()) {
    }
    o.checksums.push_back(it.epoch_checksum());
  }
  for (const BadSample& s : it.bad_samples().list()) {
    const std::string rel(index.relative_path(s.index));
    std::string reason = s.reason;
    for (size_t at = 0; !s.path.empty() && (at = reason.find(s.path, at)) != std::string::npos;
         at += rel.size()) {
      reason.replace(at, s.path.size(), rel);
    }
    o.bad.emplace_back(s.index, rel, reason);
  }
  o.replacements = it.bad_samples().skipped.load();
  return o;
}

// Serial's outcome on the local dataset `local`, computed once per (dataset, source).
const Outcome& reference(const std::string& local, SourceOptions::Kind kind) {
  static std::map<std::string, Outcome> cache;
  const std::string key = local + "#" + source_kind_name(kind);
  auto it = cache.find(key);
  if (it == cache.end()) {
    it = cache.emplace(key, run(open_index(local), config("serial", kind))).first;
  }
  return it->second;
}

// (reader, source name): plain strings, so test names are stable and readable.
using Param = std::tuple<std::string, std::string>;

const SourceCase& source_case(const std::string& name) {
  for (const SourceCase& s : kSources) {
    if (name == s.name) return s;
  }
  std::abort();
}

// A run stopped after two batches of epoch 1 and resumed from its position yields the rest
// of `all` (that epoch run whole), byte for byte.
void expect_resume_after_two_batches(const Index& index, const LoaderConfig& c,
                                     const test::EpochRecord& all) {
  Iterator first(index, c);
  first.start_epoch(1);
  ASSERT_NE(first.next(), nullptr);
  ASSERT_NE(first.next(), nullptr);
  const Position at = first.position();
  Iterator resumed(index, c);
  const test::EpochRecord rest = test::run_epoch(resumed, at.epoch, at.index);
  ASSERT_EQ(rest.batch_checksums.size() + 2, all.batch_checksums.size());
  for (size_t i = 0; i < rest.batch_checksums.size(); ++i) {
    EXPECT_EQ(rest.batch_checksums[i], all.batch_checksums[i + 2]) << "batch " << i + 2;
    EXPECT_EQ(rest.bytes[i], all.bytes[i + 2]) << "batch " << i + 2;
  }
}

class ReaderSuite : public ::testing::TestWithParam<Param> {
 protected:
  std::string reader() const { return std::get<0>(GetParam()); }
  const SourceCase& source() const { return source_case(std::get<1>(GetParam())); }
  SourceOptions::Kind reference_kind() const {
    return source().reads_files ? SourceOptions::Kind::pread : source().kind;
  }
  // The dataset as this source reads it (and its local copy), or skips with the reason.
  bool prepare(const std::string& tree, std::string& out) {
    std::string skip;
    const Prepared p = source().prepare(tree, scratch_, &skip);
    if (p.dataset.empty()) {
      skip_ = skip;
      return false;
    }
    out = p.dataset;
    local_ = p.local;
    return true;
  }
  // Serial's outcome on the local copy: over pread for sources of files, else this source.
  const Outcome& want() const { return reference(local_, reference_kind()); }
  TempDir scratch_;
  std::string local_;
  std::string skip_;
};

// Sources of files are held to serial over pread on the original tree, pixel for pixel: a
// packed (shards rows, in global order) or served (nfs rows) copy must decode as the tree.
TEST_P(ReaderSuite, CleanDataGivesSerialsChecksums) {
  std::string root;
  if (!prepare(clean_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  const Outcome& want =
      source().reads_files ? reference(clean_set(), SourceOptions::Kind::pread) : this->want();
  if (reader().rfind("uring", 0) == 0 && uring_works()) {  // a threads:T fallback passes too
    EXPECT_EQ(Iterator(index, config(reader(), source().kind)).reader().text(), reader());
  }
  const Outcome got = run(index, config(reader(), source().kind));
  EXPECT_EQ(got.checksums, want.checksums);
  EXPECT_NE(got.checksums.at(0), got.checksums.at(1)) << "two epochs, two orders";
  EXPECT_TRUE(got.bad.empty());
  EXPECT_EQ(got.replacements, 0u);
  if (!source().reads_files) return;
  const Index tree_index = open_index(clean_set());
  Iterator tree(tree_index, config("serial", SourceOptions::Kind::pread));
  Iterator it(index, config(reader(), source().kind));
  EXPECT_TRUE(test::run_epoch(it, 0).bytes == test::run_epoch(tree, 0).bytes)
      << "pixels differ from the tree's";
}

// The sampler's order and the labels, sample by sample, from images that encode their index
// (the local copy of every source of files keeps the tree's order), shuffled or not.
TEST_P(ReaderSuite, OrderAndLabelsFromImagesThatEncodeTheirIndex) {
  if (!source().reads_files)
    STOKER_SKIP_HONEST("not-applicable", "the null source serves one fixed image");
  std::string root;
  if (!prepare(index_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  for (bool shuffle : {false, true}) {
    LoaderConfig c = config(reader(), source().kind);
    c.sampler.batch_size = 5;
    c.sampler.seed = 17;
    c.sampler.shuffle = shuffle;
    c.transform.size = 48;
    c.prefetch = 3;
    c.output.dtype = DType::u8;
    c.output.layout = Layout::nhwc;
    Iterator it(index, c);
    it.start_epoch(2);
    size_t pos = 0;
    while (const Batch* b = it.next()) {
      for (size_t i = 0; i < b->size; ++i, ++pos) {
        const uint32_t expected = it.sampler().at(pos);
        const auto* px = static_cast<const uint8_t*>(b->sample(i)) + (24 * 48 + 24) * 3;
        ASSERT_EQ(index_from_colour(px), expected) << "shuffle " << shuffle << " pos " << pos;
        ASSERT_EQ(b->indices[i], expected);
        ASSERT_EQ(b->labels[i], static_cast<int32_t>(expected / kIndexPerClass));
      }
    }
    EXPECT_EQ(pos, static_cast<size_t>(kIndexClasses * kIndexPerClass));
    EXPECT_EQ(it.position().index, pos);
  }
}

// The loader's memory hook (loader/host_memory.h): every batch tensor comes from `allocate`
// and goes back through `release`; processes:N pins its one shared pool instead. Counting
// hooks over real heap memory, and the batches stay serial's.
struct CountingMemory {
  std::map<void*, size_t> live;
  int allocations = 0, releases = 0, pins = 0, unpins = 0;
  size_t pinned_bytes = 0;
  HostMemory hook() {
    HostMemory m;
    m.allocate = [this](size_t bytes) {
      void* p = std::aligned_alloc(4096, bytes);
      live[p] = bytes;
      ++allocations;
      return p;
    };
    m.release = [this](void* p) {
      EXPECT_EQ(live.erase(p), 1u);
      std::free(p);
      ++releases;
    };
    m.pin = [this](void*, size_t bytes) {
      ++pins;
      pinned_bytes = bytes;
    };
    m.unpin = [this](void*) { ++unpins; };
    return m;
  }
};

TEST_P(ReaderSuite, EveryReaderUsesTheMemoryHookAndTheBatchesStayTheSame) {
  std::string root;
  if (!prepare(clean_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  CountingMemory count;
  {
    LoaderConfig c = config(reader(), source().kind);
    c.memory = count.hook();
    Iterator it(index, c);
    EXPECT_EQ(test::run_epoch(it, 0).epoch_checksum, want().checksums.at(0));
  }
  if (reader().starts_with("processes")) {
    EXPECT_EQ(count.allocations, 0);  // one shared pool, pinned instead
    EXPECT_EQ(count.pins, 1);
    EXPECT_GE(count.pinned_bytes, 8u * 3 * 32 * 32 * 4);
    EXPECT_EQ(count.unpins, 1);
  } else {
    EXPECT_GT(count.allocations, 0);
    EXPECT_EQ(count.releases, count.allocations);
    EXPECT_TRUE(count.live.empty());
  }
}

// Iterator::retain/release (the hook zero-copy consumers such as the Python module use): a
// retained batch is never overwritten while later batches come, its buffer is reused once
// released, and holding every buffer is an error rather than a wait.
std::vector<char> bytes_of(const Batch& b) {
  const char* p = static_cast<const char*>(b.data);
  return {p, p + b.bytes()};
}

TEST_P(ReaderSuite, RetainedBatchesSurviveAndBuffersComeBack) {
  std::string root;
  if (!prepare(clean_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  LoaderConfig c = config(reader(), source().kind);
  c.sampler.batch_size = 4;
  c.keep = 2;
  Iterator it(index, c);
  ASSERT_EQ(it.batches_per_epoch(), 10u);  // 39 images
  it.start_epoch(0);
  const Batch* first = it.next();
  it.retain();
  const std::vector<char> first_bytes = bytes_of(*first);
  const uint64_t first_number = first->number;
  // The other buffers cycle under it for the rest of the epoch.
  size_t n = 1;
  while (const Batch* b = it.next()) {
    EXPECT_NE(b, first);
    ++n;
  }
  EXPECT_EQ(n, 10u);
  EXPECT_EQ(first->number, first_number);
  EXPECT_EQ(bytes_of(*first), first_bytes);
  it.release(first);

  // Hold every buffer: the pool is prefetch + 1 + keep (serial: 1 + keep).
  const size_t pool = reader() == "serial" ? 1 + c.keep : pool_batches(c);
  it.start_epoch(1);
  std::vector<const Batch*> held;
  for (size_t i = 0; i < pool; ++i) {
    held.push_back(it.next());
    it.retain();
  }
  try {
    it.next();
    ADD_FAILURE() << "next() with every buffer retained did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("held by the consumer"), std::string::npos) << e.what();
  }
  it.release(held.back());
  const Batch* again = it.next();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->number, pool);  // the refused call did not skip a batch
  for (size_t i = 0; i + 1 < held.size(); ++i) it.release(held[i]);
}

TEST_P(ReaderSuite, CorruptedDataIsDeterministicAndEqualsSerial) {
  if (!source().reads_files)
    STOKER_SKIP_HONEST("not-applicable", "the null source serves fixed bytes: nothing is bad");
  const Corrupted& set = corrupted_set();
  if (set.root.empty()) STOKER_SKIP_IF_OPTIONAL("no photographs (Debian: opencv-doc)");
  std::string root;
  if (!prepare(set.root, root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  ASSERT_EQ(index.size(), 120u);
  const Outcome& want = this->want();
  // The set must really be hard: many bad files, replacement chains longer than one.
  EXPECT_GE(want.bad.size(), 20u);
  EXPECT_LE(want.bad.size(), set.damaged);
  EXPECT_GT(want.replacements, want.bad.size());
  for (int repeat = 0; repeat < 3; ++repeat) {
    const Outcome got = run(index, config(reader(), source().kind));
    ASSERT_EQ(got.checksums, want.checksums) << "run " << repeat;
    ASSERT_EQ(got.replacements, want.replacements) << "run " << repeat;
    ASSERT_EQ(got.bad, want.bad) << "run " << repeat;
  }
}

// Files bad before indexing (truncated, empty, text) and one gone after it: every reader
// over every source of files skips the same ones, with the same batches and replacements, as
// serial over pread on the local copy. A tree of this test's own, since a file of it goes (on
// the NFS rows from the served copy: the server no longer has it; packed shards keep it).
TEST_P(ReaderSuite, FilesBadOrGoneAfterIndexingAreSkippedAsSerialSkipsThem) {
  if (!source().reads_files)
    STOKER_SKIP_HONEST("not-applicable", "the null source serves fixed bytes: nothing is bad");
  const std::string tree = test::make_dataset(scratch_, GenPattern::index, 64, 3, 12);
  const auto good = test::read_bytes(tree + "/class_000/img_000000.jpg");
  test::write_bytes(tree + "/class_000/img_000100.jpg",
                    {good.begin(), good.begin() + ptrdiff_t(good.size() / 2)});  // truncated
  test::write_bytes(tree + "/class_001/img_000100.jpg", {});
  test::write_text(tree + "/class_002/img_000100.jpg", "not an image at all\n");
  const std::string gone = "class_002/img_000101.jpg";
  test::write_bytes(tree + "/" + gone, good);
  std::string root;
  if (!prepare(tree, root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  const Index local = open_index(local_);
  ASSERT_EQ(index.size(), 40u);
  std::filesystem::remove(local_ + "/" + gone);  // gone from a tree; a shard keeps its bytes
  const Outcome want = run(local, config("serial", reference_kind()));
  const Outcome got = run(index, config(reader(), source().kind));
  EXPECT_EQ(want.bad.size(), index.sharded() ? 3u : 4u);
  EXPECT_EQ(got.checksums, want.checksums);
  EXPECT_EQ(got.replacements, want.replacements);
  ASSERT_EQ(got.bad.size(), want.bad.size());
  for (size_t i = 0; i < want.bad.size(); ++i) {
    const auto& [index_got, rel, why] = got.bad[i];
    EXPECT_EQ(index_got, std::get<0>(want.bad[i]));
    EXPECT_EQ(rel, std::get<1>(want.bad[i]));
    // A file gone from a server fails in the server's words, not the local filesystem's.
    if (root == local_ || rel != gone) {
      EXPECT_EQ(why, std::get<2>(want.bad[i])) << rel;
    }
    EXPECT_NE(why.find(rel), std::string::npos) << why;  // names the file
  }
}

TEST_P(ReaderSuite, FailPolicyStopsNamingABadFile) {
  if (!source().reads_files)
    STOKER_SKIP_HONEST("not-applicable", "the null source serves fixed bytes: nothing is bad");
  const Corrupted& set = corrupted_set();
  if (set.root.empty()) STOKER_SKIP_IF_OPTIONAL("no photographs (Debian: opencv-doc)");
  std::string root;
  if (!prepare(set.root, root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  const Outcome& want = this->want();
  LoaderConfig c = config(reader(), source().kind);
  c.on_error = ErrorPolicy::fail;
  Iterator it(index, c);
  it.start_epoch(0);
  try {
    while (it.next()) {
    }
    FAIL() << "an epoch over damaged files ended without an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    const bool names_one = std::any_of(want.bad.begin(), want.bad.end(), [&](const auto& b) {
      return msg.find(std::get<1>(b)) != std::string::npos;
    });
    EXPECT_TRUE(names_one) << msg;
  }
}

// ---- the bad-input matrix --------------------------------------------------------------

// Under `skip` every bad file is replaced (batches stay full), listed once with a reason that
// names it and says why, and never reaches a batch; under `fail` the run stops naming one;
// a set with nothing good is an error. Never a crash or a hang. A tree of each test's own.
size_t find_marker(const std::vector<uint8_t>& b, uint8_t code) {
  for (size_t i = 0; i + 1 < b.size(); ++i)
    if (b[i] == 0xff && b[i + 1] == code) return i;
  return std::string::npos;
}

// 36 good images and 9 more: 6 bad (relative path -> words of the reason), a PNG named .jpg
// (not bad: it decodes by content) and two good files that break_after_indexing breaks.
struct BadInputTree {
  std::string root;
  std::map<std::string, std::string> expect;
};

BadInputTree bad_input_tree(const TempDir& dir) {
  BadInputTree t;
  t.root = test::make_dataset(dir, GenPattern::index, 64, 3, 12);
  const auto put = [&](const std::string& rel, const std::vector<uint8_t>& bytes) {
    test::write_bytes(t.root + "/" + rel, bytes);
  };
  const std::vector<uint8_t> good = test::read_bytes(t.root + "/class_000/img_000000.jpg");
  auto b = good;
  b.resize(b.size() / 2);
  put("class_000/img_000100.jpg", b);  // truncated
  t.expect["class_000/img_000100.jpg"] = "Premature end";
  b = good;
  const size_t sos = find_marker(b, 0xda);
  b.resize(sos + (b.size() - sos) / 3);
  b.push_back(0xff);
  b.push_back(0xd9);
  put("class_001/img_000100.jpg", b);  // corrupt scan
  t.expect["class_001/img_000100.jpg"] = "corrupt JPEG data";
  put("class_001/img_000101.jpg", {});  // zero bytes
  t.expect["class_001/img_000101.jpg"] = "empty";
  const std::string text = "not an image at all\n";
  put("class_002/img_000100.jpg", {text.begin(), text.end()});
  t.expect["class_002/img_000100.jpg"] = "not a recognised image";
  b = good;
  const size_t sof = find_marker(b, 0xc0);
  b[sof + 1] = 0xc1;
  b[sof + 4] = 12;
  put("class_002/img_000101.jpg", b);
  t.expect["class_002/img_000101.jpg"] = "12-bit";
  b = good;
  b[sof + 5] = 0x75, b[sof + 6] = 0x30, b[sof + 7] = 0x75, b[sof + 8] = 0x30;
  put("class_002/img_000102.jpg", b);
  t.expect["class_002/img_000102.jpg"] = "limit";
  std::vector<uint8_t> png;
  cv::imencode(".png", cv::Mat(64, 64, CV_8UC3, cv::Scalar(8, 8, 8)), png);
  put("class_000/img_000101.jpg", png);
  put("class_000/img_000102.jpg", good);
  put("class_001/img_000102.jpg", good);
  return t;
}

// Two files of the tree at `local` go bad after indexing: one removed, one a folder now.
void break_after_indexing(const std::string& local, std::map<std::string, std::string>& expect) {
  std::filesystem::remove(local + "/class_000/img_000102.jpg");
  expect["class_000/img_000102.jpg"] = "No such file";
  std::filesystem::remove(local + "/class_001/img_000102.jpg");
  std::filesystem::create_directory(local + "/class_001/img_000102.jpg");
  expect["class_001/img_000102.jpg"] = "not a regular file";
}

// Files bad before indexing everywhere; on trees (not shards, which keep their bytes) two
// that go bad after it, on the NFS rows in the served copy (the reason then in the server's
// words: only that it names the file is checked).
TEST_P(ReaderSuite, SkipReplacesCountsAndListsEveryBadFile) {
  if (!source().reads_files)
    STOKER_SKIP_HONEST("not-applicable", "the null source serves fixed bytes: nothing is bad");
  BadInputTree t = bad_input_tree(scratch_);
  std::string root;
  if (!prepare(t.root, root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  ASSERT_EQ(index.size(), 36u + 9u);
  const size_t bad_before = t.expect.size();
  if (!index.sharded()) break_after_indexing(local_, t.expect);
  LoaderConfig c = config(reader(), source().kind);
  c.sampler.batch_size = 7;
  Iterator it(index, c);
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
        EXPECT_EQ(t.expect.count(rel), 0u) << rel << " reached a batch";
      }
      seen += b->size;
    }
    EXPECT_EQ(seen, index.size());
  }
  const auto bad = it.bad_samples().list();
  std::set<std::string> listed;
  for (const BadSample& s : bad) {
    const std::string rel(index.relative_path(s.index));
    listed.insert(rel);
    ASSERT_TRUE(t.expect.count(rel)) << "unexpected bad sample " << rel << ": " << s.reason;
    EXPECT_NE(s.reason.find(rel), std::string::npos) << s.reason;  // names the file
    const bool gone_from_a_server =
        root != local_ && (rel == "class_000/img_000102.jpg" || rel == "class_001/img_000102.jpg");
    if (!gone_from_a_server) {
      EXPECT_NE(s.reason.find(t.expect[rel]), std::string::npos) << s.reason;
    }
  }
  EXPECT_EQ(listed.size(), t.expect.size());
  EXPECT_EQ(t.expect.size(), bad_before + (index.sharded() ? 0 : 2));
  EXPECT_EQ(bad.size(), t.expect.size()) << "each file is listed once over two epochs";
  // Every failed attempt counts; neighbouring bad files make chains, so at least one per bad
  // file per epoch, and exactly the attempts the batches report beyond the first.
  EXPECT_GE(it.bad_samples().skipped.load(), 2 * t.expect.size());
  EXPECT_EQ(it.bad_samples().skipped.load(), extra_attempts);

  c.on_error = ErrorPolicy::fail;
  Iterator failing(index, c);
  failing.start_epoch(0);
  try {
    while (failing.next()) {
    }
    FAIL() << "no error under --on-error fail";
  } catch (const Error& e) {
    const std::string msg = e.what();
    bool named = false;
    for (const auto& [rel, why] : t.expect) named |= msg.find(rel) != std::string::npos;
    EXPECT_TRUE(named) << msg;
  }
}

// A set with no good sample at all, and a replacement limit: an error, not a hang.
TEST_P(ReaderSuite, AllSamplesBadIsAnErrorNotAHang) {
  if (!source().reads_files)
    STOKER_SKIP_HONEST("not-applicable", "the null source serves fixed bytes: nothing is bad");
  for (int i = 0; i < 30; ++i)
    test::write_text(scratch_ / ("junk/c/" + std::to_string(i) + ".jpg"), "junk");
  std::string root;
  if (!prepare(scratch_ / "junk", root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  LoaderConfig c = config(reader(), source().kind);
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

TEST_P(ReaderSuite, ResumeMidEpochGivesExactlyTheRemainingBatches) {
  std::string root;
  if (!prepare(clean_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  const LoaderConfig c = config(reader(), source().kind);
  Iterator whole(index, c);
  const test::EpochRecord all = test::run_epoch(whole, 1);
  expect_resume_after_two_batches(index, c, all);
}

// A run stopped at the end of an epoch (a checkpoint taken there, with the short last batch
// consumed) resumes from the position it saved: nothing is left of that epoch, and the next
// one is bit for bit the uninterrupted run's. Then a stop inside epoch 0, too.
TEST_P(ReaderSuite, ResumeAtAnEpochBoundaryGivesExactlyTheNextEpoch) {
  std::string root;
  if (!prepare(clean_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  const LoaderConfig c = config(reader(), source().kind);
  Iterator whole(index, c);
  const test::EpochRecord all0 = test::run_epoch(whole, 0);
  const test::EpochRecord all1 = test::run_epoch(whole, 1);
  ASSERT_NE(index.size() % c.sampler.batch_size, 0u) << "the set must end in a short batch";

  Iterator first(index, c);
  test::run_epoch(first, 0);
  const Position end = first.position();
  EXPECT_EQ(end.epoch, 0u);
  EXPECT_EQ(end.index, index.size());
  Iterator resumed(index, c);
  const test::EpochRecord rest = test::run_epoch(resumed, end.epoch, end.index);
  EXPECT_TRUE(rest.batch_checksums.empty()) << rest.batch_checksums.size() << " batches left";
  const test::EpochRecord next = test::run_epoch(resumed, end.epoch + 1);
  EXPECT_EQ(next.batch_checksums, all1.batch_checksums);
  EXPECT_TRUE(next.bytes == all1.bytes);
  EXPECT_EQ(next.epoch_checksum, all1.epoch_checksum);

  // Stopped after the first batch of epoch 0.
  Iterator early(index, c);
  early.start_epoch(0);
  ASSERT_NE(early.next(), nullptr);
  const Position at = early.position();
  Iterator again(index, c);
  const test::EpochRecord tail = test::run_epoch(again, at.epoch, at.index);
  ASSERT_EQ(tail.batch_checksums.size() + 1, all0.batch_checksums.size());
  for (size_t i = 0; i < tail.batch_checksums.size(); ++i) {
    EXPECT_EQ(tail.batch_checksums[i], all0.batch_checksums[i + 1]) << "batch " << i + 1;
    EXPECT_EQ(tail.bytes[i], all0.bytes[i + 1]) << "batch " << i + 1;
  }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  std::string name = std::get<0>(info.param) + "_" + std::get<1>(info.param);
  std::replace(name.begin(), name.end(), ':', '_');
  return name;
}

// Every (reader, source) pair of the tables: those the reader can use (refused = false), or
// those it must refuse (true).
std::vector<Param> pairs(bool refused) {
  std::vector<Param> out;
  for (const char* reader : kReaders) {
    for (const SourceCase& s : kSources) {
      if ((needs_async_source(parse_reader(reader)) && !s.serves_submitters) == refused)
        out.emplace_back(reader, s.name);
    }
  }
  return out;
}

// ---- sizes that change over a run (loader/sampler/size_schedule.h)
// --------------------------------

// An epoch schedule: 32, 64, then 96 px. Every reader gives serial's checksums, each epoch
// equals a fixed-size run at that epoch's size (the crops are a function of the seed alone),
// and the pool was sized once for 96 px: its bytes never change.
TEST_P(ReaderSuite, EpochSizeScheduleEqualsSerialAndFixedSizeRuns) {
  std::string root;
  if (!prepare(clean_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  LoaderConfig c = config(reader(), source().kind);
  c.size_schedule = parse_size_schedule("32:96@0-2");
  LoaderConfig serial = config("serial", reference_kind());
  serial.size_schedule = c.size_schedule;
  const Index local = open_index(local_);
  const Outcome want = run(local, serial, 3);
  Iterator it(index, c);
  LoaderConfig fixed96 = config(reader(), source().kind);
  fixed96.transform.size = 96;
  const size_t pool = Iterator(index, fixed96).pool_bytes();
  EXPECT_EQ(it.pool_bytes(), pool);
  const int sides[] = {32, 64, 96};
  for (uint64_t e = 0; e < 3; ++e) {
    it.start_epoch(e);
    while (const Batch* b = it.next()) {
      ASSERT_EQ(b->spec.width, sides[e]) << "epoch " << e;
      ASSERT_EQ(b->spec.height, sides[e]) << "epoch " << e;
    }
    EXPECT_EQ(it.epoch_checksum(), want.checksums[e]) << "epoch " << e;
    EXPECT_EQ(it.pool_bytes(), pool) << "epoch " << e;
    LoaderConfig fixed = config("serial", reference_kind());
    fixed.transform.size = sides[e];
    Iterator one(local, fixed);
    EXPECT_EQ(test::run_epoch(one, e).epoch_checksum, want.checksums[e]) << "epoch " << e;
  }
}

// A step schedule changes the size between batches of one epoch (prefetched batches of two
// sizes in flight at once); a run resumed in the middle of the ramp continues exactly.
TEST_P(ReaderSuite, StepSizeScheduleResumesMidRampExactly) {
  std::string root;
  if (!prepare(clean_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  LoaderConfig c = config(reader(), source().kind);
  c.size_schedule = parse_size_schedule("32:96@steps:4-12");
  LoaderConfig serial = config("serial", reference_kind());
  serial.size_schedule = c.size_schedule;
  const Index local = open_index(local_);
  Iterator reference(local, serial);
  const test::EpochRecord want = test::run_epoch(reference, 1);
  Iterator whole(index, c);
  const size_t per_epoch = whole.batches_per_epoch();
  std::vector<int> sides;
  whole.start_epoch(1);
  while (const Batch* b = whole.next()) sides.push_back(b->spec.width);
  ASSERT_EQ(sides.size(), per_epoch);
  for (size_t k = 0; k < sides.size(); ++k)
    EXPECT_EQ(sides[k], c.size_schedule.at(1, per_epoch + k)) << "batch " << k;
  EXPECT_NE(sides.front(), sides.back()) << "the ramp must cross this epoch";
  const test::EpochRecord all = test::run_epoch(whole, 1);
  EXPECT_EQ(all.batch_checksums, want.batch_checksums);
  expect_resume_after_two_batches(index, c, all);
}

INSTANTIATE_TEST_SUITE_P(All, ReaderSuite, ::testing::ValuesIn(pairs(false)), param_name);

// A reader that needs an asynchronous source, over a source the user named that has none: a
// usage error naming the reader and the source, before anything is read; never another
// source in its place.
using RefusedPair = ReaderSuite;
TEST_P(RefusedPair, IsAUsageErrorNamingReaderAndSource) {
  std::string root;
  if (!prepare(clean_set(), root)) STOKER_SKIP_IF_OPTIONAL(skip_);
  const Index index = open_index(root);
  try {
    Iterator it(index, config(reader(), source().kind));
    FAIL() << "accepted";
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(reader()), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string("the ") + source_kind_name(source().kind) + " source"),
              std::string::npos)
        << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(All, RefusedPair, ::testing::ValuesIn(pairs(true)), param_name);

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
