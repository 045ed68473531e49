// SPDX-License-Identifier: Apache-2.0
#include "loader/loader_stats.h"

#include <fmt/format.h>

#include "loader/iterator.h"

namespace stoker {

std::string hex64(uint64_t v) {
  return fmt::format("{:016x}", v);
}

void LoaderStats::add_batch(const Batch& batch, int64_t wait_ns) {
  ++batches;
  images += batch.size;
  batch_wait.add(wait_ns);
  for (size_t i = 0; i < batch.size; ++i) {
    const SampleTiming& t = batch.timing[i];
    bytes += t.bytes;
    attempts += t.attempts;
    read_ns += t.read_ns;
    decode_ns += t.decode_ns;
    augment_ns += t.augment_ns;
    collate_ns += t.collate_ns;
    read.add(t.read_ns);
    decode.add(t.decode_ns);
    augment.add(t.augment_ns);
    collate.add(t.collate_ns);
  }
}

namespace {

nlohmann::json percentiles_ms(const Histogram& h) {
  return {{"mean", h.mean_ns() / 1e6},
          {"p50", h.quantile_ns(0.50) / 1e6},
          {"p90", h.quantile_ns(0.90) / 1e6},
          {"p99", h.quantile_ns(0.99) / 1e6},
          {"max", h.max_ns() / 1e6}};
}

}  // namespace

nlohmann::json LoaderStats::to_json(const Iterator& it) const {
  const double n = images ? static_cast<double>(images) : 1.0;
  const double secs = wall_ns * 1e-9;
  nlohmann::json bad = nlohmann::json::array();
  for (const BadSample& b : it.bad_samples().list()) {
    bad.push_back({{"index", b.index}, {"path", b.path}, {"reason", b.reason}});
  }
  return {
      {"reader", it.config().reader.text()},
      {"batches", batches},
      {"images", images},
      {"bytes", bytes},
      {"seconds", secs},
      {"images_per_s", images_per_s()},
      {"mb_per_s", mb_per_s()},
      {"stage_ms_per_image",
       {{"read", read_ns / 1e6 / n},
        {"decode", decode_ns / 1e6 / n},
        {"augment", augment_ns / 1e6 / n},
        {"collate", collate_ns / 1e6 / n}}},
      {"stage_ms",
       {{"read", percentiles_ms(read)},
        {"decode", percentiles_ms(decode)},
        {"augment", percentiles_ms(augment)},
        {"collate", percentiles_ms(collate)}}},
      {"batch_wait_ms", percentiles_ms(batch_wait)},
      {"cpu_seconds", cpu_seconds},
      {"cpu_cores_used", secs > 0 ? cpu_seconds / secs : 0.0},
      {"pool_bytes", it.pool_bytes()},
      {"errors",
       {{"files", bad.size()}, {"replacements", it.bad_samples().skipped.load()}, {"list", bad}}},
      {"epoch_checksums", epoch_checksums},
  };
}

}  // namespace stoker
