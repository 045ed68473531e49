// SPDX-License-Identifier: Apache-2.0
// What a run of the loader measured: per-stage time (summed over loader threads), bytes, the time
// the consumer waited for each batch, CPU time, and the bad samples. Fixed-size state, fed
// batch by batch; `to_json` is the schema documented in docs/FORMATS.md.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "common/histogram.h"
#include "common/measures.h"
#include "loader/batch.h"

namespace stoker {

class Iterator;

struct LoaderStats {
  uint64_t batches = 0, images = 0, bytes = 0, attempts = 0;
  int64_t read_ns = 0, decode_ns = 0, augment_ns = 0, collate_ns = 0;
  Histogram read, decode, augment, collate;  // per sample
  Histogram batch_wait;                      // per batch: time the consumer blocked in next()
  int64_t wall_ns = 0;
  double cpu_seconds = 0;
  std::vector<std::string> epoch_checksums;  // hex, one per completed epoch

  void add_batch(const Batch& batch, int64_t wait_ns);
  // Summary as JSON; `iterator` supplies the bad-sample list and configuration.
  nlohmann::json to_json(const Iterator& iterator) const;
  // common/measures.h's images/s, over the run's wall time.
  double images_per_s() const { return stoker::images_per_s(double(images), wall_ns * 1e-9); }
  double mb_per_s() const { return wall_ns ? bytes / 1e6 / (wall_ns * 1e-9) : 0.0; }
};

std::string hex64(uint64_t v);

}  // namespace stoker
