// SPDX-License-Identifier: Apache-2.0
// Helpers for the iterator tests of every reader: a generated dataset, whether io_uring works
// here, and one epoch recorded batch by batch (checksums and raw bytes) for bit-for-bit
// comparisons.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loader/iterator.h"
#include "test_util.h"
#include "tools/gen/gen_dataset.h"

namespace stoker::test {

inline std::string make_dataset(const TempDir& d, GenPattern pattern, int size, int classes,
                                int per_class) {
  GenConfig g;
  g.out = d / "data";
  g.sizes = {size};
  g.classes = classes;
  g.per_class = per_class;
  g.pattern = pattern;
  g.quality = 95;
  g.progress = false;
  return generate_dataset(g).roots.at(0);
}

// Whether io_uring works here (the build has liburing and the kernel accepts a ring).
inline bool uring_works() {
  static const bool works = [] {
    try {
      make_uring_source({});
      return true;
    } catch (const Error&) {
      return false;
    }
  }();
  return works;
}

struct EpochRecord {
  std::vector<uint64_t> batch_checksums;
  std::vector<std::vector<uint8_t>> bytes;
  uint64_t epoch_checksum = 0;
};

// Runs `epoch` from sample `start`; during(n) is called before the first batch (n = -1) and
// after the n-th batch arrives.
template <class F>
EpochRecord run_epoch_watching(Iterator& it, uint64_t epoch, uint64_t start, F during) {
  EpochRecord r;
  it.start_epoch(epoch, start);
  during(-1);
  while (const Batch* b = it.next()) {
    r.batch_checksums.push_back(b->checksum);
    const auto* p = static_cast<const uint8_t*>(b->data);
    r.bytes.emplace_back(p, p + b->bytes());
    during(static_cast<int>(r.batch_checksums.size()) - 1);
  }
  r.epoch_checksum = it.epoch_checksum();
  return r;
}

inline EpochRecord run_epoch(Iterator& it, uint64_t epoch, uint64_t start = 0) {
  return run_epoch_watching(it, epoch, start, [](int) {});
}

}  // namespace stoker::test
