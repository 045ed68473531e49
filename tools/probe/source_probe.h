// SPDX-License-Identifier: Apache-2.0
// The raw ceiling of a dataset's source, no reader and no decoding: every sample's bytes
// read straight through the Source interface with a fixed number of requests in flight
// (1: synchronous read(); more: submit/reap, for sources that can). Used by `stoker probe
// --depth` to tell storage latency from the loader's own limits (NFS above all).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "common/histogram.h"
#include "common/measures.h"
#include "loader/index/index.h"
#include "loader/sources/source.h"

namespace stoker {

struct SourceProbe {
  std::string source;  // the source's name ("nfs", "pread", ...)
  uint32_t depth = 1;  // requests in flight
  uint64_t files = 0, bytes = 0, errors = 0;
  double seconds = 0, cpu_seconds = 0;
  Histogram latency;  // per read, submit to completion
  // A file is a sample: its rate is common/measures.h's images/s (the JSON's images_per_s).
  double files_per_s() const { return images_per_s(double(files), seconds); }
  double mb_per_s() const { return seconds > 0 ? bytes / 1e6 / seconds : 0; }
  nlohmann::json to_json() const;
};

// Reads the samples of `index` (shuffled with `seed`, or in index order; at most max_files,
// 0 = all) with `depth` in flight. A file that fails counts as an error; a broken source
// (ring, server) throws. depth > 1 needs an asynchronous source (it says so otherwise).
SourceProbe probe_source(const Index& index, SourceOptions options, uint32_t depth, bool shuffled,
                         uint64_t seed, uint64_t max_files);

}  // namespace stoker
