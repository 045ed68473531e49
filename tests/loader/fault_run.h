// SPDX-License-Identifier: Apache-2.0
// What the source tests share (source_faults_test.cc, the suite, and the tests of what only
// one source has: source_pread_test.cc, source_uring_test.cc): one dataset, one loader
// configuration, and what they compare between a run with injected faults (or changed files)
// and one without: two epochs through a real Iterator, their checksums, the bad samples, the
// bytes read, and the reader that actually ran (a uring reader may fall back to threads:T).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "loader/iterator.h"
#include "loader_test_util.h"
#include "test_util.h"

namespace stoker::test {

struct Outcome {
  std::vector<uint64_t> checksums;
  std::vector<std::tuple<uint32_t, std::string>> bad;  // (index, reason)
  uint64_t bytes_read = 0;
  std::string reader;
};

inline Outcome run(const Index& index, const LoaderConfig& c) {
  Iterator it(index, c);
  Outcome o;
  o.reader = it.reader().text();
  for (uint64_t e = 0; e < 2; ++e) {
    it.start_epoch(e);
    while (const Batch* b = it.next()) {
      for (size_t i = 0; i < b->size; ++i) o.bytes_read += b->timing[i].bytes;
    }
    o.checksums.push_back(it.epoch_checksum());
  }
  for (const BadSample& s : it.bad_samples().list()) o.bad.emplace_back(s.index, s.reason);
  return o;
}

// The source tests' loader: `reader` over pread unless the test names another source.
inline LoaderConfig source_config(const std::string& reader) {
  LoaderConfig c;
  c.reader = parse_reader(reader);
  c.source.kind = SourceOptions::Kind::pread;
  c.sampler.batch_size = 6;
  c.sampler.seed = 9;
  c.transform.size = 32;
  c.prefetch = 2;
  c.warn = false;
  return c;
}

// Their dataset: photographs of 160 px, 10-30 KB each, several 4 KiB blocks (O_DIRECT, short
// reads), and serial's outcome over pread on it.
struct SourceData {
  TempDir dir;
  std::string root;
  Index index;
  Outcome want;

  void make() {
    root = make_dataset(dir, GenPattern::photo, 160, 3, 7);
    index = open_index(root);
    want = run(index, source_config("serial"));
  }
  // One sample's file (sorted order), relative to the root.
  std::string file(uint32_t i) const { return std::string(index.relative_path(i)); }
  bool direct_supported() const {
    const int fd = open((root + "/" + file(0)).c_str(), O_RDONLY | O_DIRECT);
    if (fd >= 0) close(fd);
    return fd >= 0;
  }
};

}  // namespace stoker::test
