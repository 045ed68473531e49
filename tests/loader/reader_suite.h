// SPDX-License-Identifier: Apache-2.0
// The reader suite's tables, datasets and fixture, shared by its test files
// (reader_suite_test.cc, reader_suite_bad_input_test.cc, source_layer_test.cc): every
// (reader, source) pair this build has, each pair held to `serial` over pread on the same
// samples. A new source is one line in a table below, a new reader one in reader_table.h.
// NFS rows read through a real NFS-Ganesha on 127.0.0.1 (one per test process, stopped at
// exit; skipped with the reason only where it cannot run, see nfs_server.h).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.h"
#include "loader/iterator.h"
#include "loader_test_util.h"
#include "nfs_server.h"
#include "reader_table.h"
#include "test_util.h"
#include "tools/gen/gen_dataset.h"
#include "tools/pack/pack_shards.h"

namespace stoker::suite {

using test::TempDir;
using test::uring_works;

// ---- the tables: add a source here (a reader: reader_table.h) ----------------------------

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

inline Prepared same_tree(const std::string& tree, const TempDir&, std::string*) {
  return {tree, tree};
}

// The tree through io_uring, named: where the kernel or the build has none, nothing to run.
inline Prepared uring_tree(const std::string& tree, const TempDir&, std::string* skip) {
  if (uring_works()) return {tree, tree};
  *skip = "no io_uring here (old kernel, seccomp, or a build without liburing-dev)";
  return {};
}

// The tree packed into several small tar shards (stoker pack), read by offset.
inline std::string pack(const std::string& tree, const std::string& out) {
  PackConfig p;
  p.data = tree;
  p.out = out;
  p.shard_size = 64 * 1024;
  p.progress = false;
  pack_shards(p);
  return p.out;
}

inline Prepared packed(const std::string& tree, const TempDir& scratch, std::string*) {
  const std::string out = pack(tree, scratch / "shards");
  return {out, out};
}

// One NFS-Ganesha per test process, exporting a folder that the NFS rows copy (or pack)
// each dataset into once; stopped at exit (statics die in reverse order: server, then folder).
struct NfsExport {
  TempDir dir;
  test::NfsServer server{dir.path()};
};
inline const NfsExport& nfs_export() {
  static const NfsExport e;
  return e;
}

// `tree` copied (as files, or packed into shards) below the export: {its URL, local copy}.
inline Prepared served(const std::string& tree, bool shards, std::string* skip) {
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

inline Prepared nfs_files(const std::string& tree, const TempDir&, std::string* skip) {
  return served(tree, false, skip);
}
inline Prepared nfs_shards(const std::string& tree, const TempDir&, std::string* skip) {
  return served(tree, true, skip);
}

inline const SourceCase kSources[] = {
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

inline const Corrupted& corrupted_set() {
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

inline const std::string& clean_set() {
  static TempDir dir;
  static const std::string root = test::make_dataset(dir, GenPattern::photo, 64, 3, 13);
  return root;
}

// Images that encode their own index in their colour (GenPattern::index): order and labels
// are checkable, sample by sample.
inline constexpr int kIndexClasses = 4, kIndexPerClass = 13;
inline const std::string& index_set() {
  static TempDir dir;
  static const std::string root =
      test::make_dataset(dir, GenPattern::index, 64, kIndexClasses, kIndexPerClass);
  return root;
}

// ---- running ----------------------------------------------------------------------------

inline LoaderConfig config(const std::string& reader, SourceOptions::Kind source) {
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

inline Outcome run(const Index& index, const LoaderConfig& c, int epochs = 2) {
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
inline const Outcome& reference(const std::string& local, SourceOptions::Kind kind) {
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

inline const SourceCase& source_case(const std::string& name) {
  for (const SourceCase& s : kSources) {
    if (name == s.name) return s;
  }
  std::abort();
}

// A run stopped after two batches of epoch 1 and resumed from its position yields the rest
// of `all` (that epoch run whole), byte for byte.
inline void expect_resume_after_two_batches(const Index& index, const LoaderConfig& c,
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

inline std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  std::string name = std::get<0>(info.param) + "_" + std::get<1>(info.param);
  std::replace(name.begin(), name.end(), ':', '_');
  return name;
}

// Every (reader, source) pair of the tables: those the reader can use (refused = false), or
// those it must refuse (true).
inline std::vector<Param> pairs(bool refused) {
  std::vector<Param> out;
  for (const char* reader : kReaders) {
    for (const SourceCase& s : kSources) {
      if ((needs_async_source(parse_reader(reader)) && !s.serves_submitters) == refused)
        out.emplace_back(reader, s.name);
    }
  }
  return out;
}

}  // namespace stoker::suite
