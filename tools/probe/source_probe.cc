// SPDX-License-Identifier: Apache-2.0
#include "tools/probe/source_probe.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "common/clock.h"
#include "common/error.h"
#include "common/system_info.h"

namespace stoker {

nlohmann::json SourceProbe::to_json() const {
  return {{"reader", fmt::format("source:{}:qd{}", source, depth)},
          {"source", source},
          {"queue_depth", depth},
          {"images", files},
          {"bytes", bytes},
          {"errors", errors},
          {"seconds", seconds},
          {"images_per_s", files_per_s()},
          {"mb_per_s", mb_per_s()},
          {"read_ms",
           {{"mean", latency.mean_ns() / 1e6},
            {"p50", latency.quantile_ns(0.50) / 1e6},
            {"p99", latency.quantile_ns(0.99) / 1e6},
            {"max", latency.max_ns() / 1e6}}},
          {"cpu_seconds", cpu_seconds},
          {"cpu_cores_used", seconds > 0 ? cpu_seconds / seconds : 0.0}};
}

SourceProbe probe_source(const Index& index, SourceOptions options, uint32_t depth, bool shuffled,
                         uint64_t seed, uint64_t max_files) {
  STOKER_CHECK(depth >= 1);
  std::vector<uint32_t> order(index.size());
  std::iota(order.begin(), order.end(), 0u);
  if (shuffled) std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  if (max_files && max_files < order.size()) order.resize(max_files);

  // Reads in flight ask for an asynchronous source, as a uring reader does: `auto` is then
  // io_uring for local files and shard byte ranges alike (make_source). Depth 1 reads as a
  // reader that calls read() would.
  const std::unique_ptr<Source> src = make_source(index, options, depth > 1 ? depth : 0);
  if (depth > 1 && !src->asynchronous()) {
    fail("the {} source reads one file at a time (no submit/reap): probe it with --depth 1",
         src->name());
  }
  SourceProbe p;
  p.source = src->name();
  p.depth = depth;
  const double cpu0 = process_cpu_seconds();
  const int64_t t0 = now_ns();
  if (depth == 1) {
    ReadBuffer buf;
    std::string name;
    for (uint32_t i : order) {
      const int64_t r0 = now_ns();
      try {
        p.bytes += src->read(locate_sample(index, i, name), buf).size();
        ++p.files;
      } catch (const Error&) {
        ++p.errors;
      }
      p.latency.add(now_ns() - r0);
    }
  } else {
    std::vector<ReadBuffer> bufs(depth);
    std::vector<std::string> names(depth);
    std::vector<uint32_t> free(depth);
    std::iota(free.begin(), free.end(), 0u);
    std::vector<ReadCompletion> done;
    size_t next = 0, in_flight = 0;
    while (next < order.size() || in_flight > 0) {
      while (!free.empty() && next < order.size()) {
        const uint32_t slot = free.back();
        free.pop_back();
        src->submit({slot, locate_sample(index, order[next++], names[slot]), &bufs[slot]});
        ++in_flight;
      }
      done.clear();
      src->reap(done, depth, 1000);
      for (const ReadCompletion& c : done) {
        --in_flight;
        free.push_back(static_cast<uint32_t>(c.tag));
        p.latency.add(c.read_ns);
        if (c.error.empty()) {
          p.bytes += c.bytes;
          ++p.files;
        } else {
          ++p.errors;
        }
      }
    }
  }
  p.seconds = (now_ns() - t0) * 1e-9;
  p.cpu_seconds = process_cpu_seconds() - cpu0;
  return p;
}

}  // namespace stoker
