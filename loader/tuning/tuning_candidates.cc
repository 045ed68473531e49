// SPDX-License-Identifier: Apache-2.0
#include "loader/tuning/tuning_candidates.h"

#include <algorithm>

namespace stoker {

std::vector<TuningCandidate> reader_candidates(int cores, size_t prefetch) {
  cores = std::max(cores, 1);
  std::vector<int> counts;
  for (int n = 1; n < cores; n *= 2) counts.push_back(n);
  counts.push_back(cores);
  std::vector<TuningCandidate> out;
  out.push_back({{ReaderSpec::Kind::serial, 1, 0}, prefetch});
  for (int n : counts) out.push_back({{ReaderSpec::Kind::threads, n, 0}, prefetch});
  for (int n : counts) out.push_back({{ReaderSpec::Kind::processes, n, 0}, prefetch});
  for (int n : counts) out.push_back({{ReaderSpec::Kind::uring, n, 8 * n}, prefetch});
  return out;
}

std::vector<TuningCandidate> prefetch_candidates(const TuningCandidate& best) {
  std::vector<TuningCandidate> out;
  if (best.reader.kind == ReaderSpec::Kind::serial) return out;  // reads in the consumer's call
  for (size_t depth : {size_t{1}, std::min<size_t>(2 * best.prefetch, 8)}) {
    if (depth != best.prefetch) out.push_back({best.reader, depth});
  }
  return out;
}

}  // namespace stoker
