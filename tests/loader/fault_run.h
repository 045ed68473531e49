// SPDX-License-Identifier: Apache-2.0
// What the source fault tests compare between a run with injected faults and one without:
// two epochs through a real Iterator, their checksums, the bad samples and the bytes read,
// and the reader that actually ran (a uring reader may fall back to threads:T).
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "loader/iterator.h"

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

}  // namespace stoker::test
