// SPDX-License-Identifier: Apache-2.0
#include "tools/bench/bench_common.h"

#include <tbb/version.h>
#include <xxhash.h>
#include <opencv2/core/version.hpp>

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include <atomic>
#include <ctime>
#include <memory>
#include <numeric>

#include "common/error.h"
#include "loader/index/index.h"
#include "loader/sources/nfs_url.h"
#include "loader/sources/source.h"
#include "tools/gen/gen_dataset.h"

namespace stoker {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(sep, start);
    const std::string part = s.substr(start, end == std::string::npos ? end : end - start);
    if (!part.empty()) out.push_back(part);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::string short_name(const std::string& root) {
  std::string r = is_nfs_url(root) ? root.substr(0, root.find('?')) : root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  const size_t slash = r.rfind('/');
  return slash == std::string::npos ? r : r.substr(slash + 1);
}

WarmStats warm_samples(const Index& index, std::span<const uint32_t> samples) {
  // Local files through pread (the page cache is ours); nfs:// through its own source, a
  // connection per thread, so that the server's cache holds them as ours would.
  const std::unique_ptr<Source> source =
      is_nfs_url(index.root) ? make_source(index, SourceOptions{}) : make_pread_source({});
  std::atomic<uint64_t> bytes{0};
  tbb::parallel_for(size_t{0}, samples.size(), [&](size_t k) {
    thread_local std::unique_ptr<Source> mine;
    if (!mine) mine = source->clone();
    ReadBuffer buf;
    std::string scratch;
    try {
      bytes += mine->read(locate_sample(index, samples[k], scratch), buf).size();
    } catch (const SourceBroken&) {
      throw;  // the storage itself: no run could read it either
    } catch (const Error&) {
      // Reported by the run itself, under the on-error policy.
    }
  });
  return {samples.size(), bytes.load()};
}

WarmStats warm_page_cache(const Index& index) {
  std::vector<uint32_t> all(index.size());
  std::iota(all.begin(), all.end(), 0u);
  return warm_samples(index, all);
}

std::vector<uint32_t> run_samples(const Index& index, const SamplerConfig& config, int epochs,
                                  size_t max_batches) {
  Sampler sampler(index.size(), config, index.shard, index.shards.size());
  std::vector<uint32_t> out;
  std::vector<bool> seen(index.size());
  size_t left = max_batches ? max_batches : SIZE_MAX;
  for (int e = 0; e < epochs && left > 0; ++e) {
    sampler.set_epoch(uint64_t(e));
    const size_t batches = std::min(sampler.batches(), left);
    left -= batches;
    const size_t end =
        batches ? sampler.batch_begin(batches - 1) + sampler.batch_length(batches - 1) : 0;
    for (size_t pos = 0; pos < end; ++pos) {
      const uint32_t i = sampler.at(pos);
      if (!seen[i]) {
        seen[i] = true;
        out.push_back(i);
      }
    }
  }
  return out;
}

// Versions are strings, xxhash's too: "0.8.1" (its number is 801).
nlohmann::json library_versions() {
  const unsigned xxh = XXH_versionNumber();
  return {{"libjpeg-turbo", STOKER_LIBJPEG_TURBO_VERSION},
          {"opencv", CV_VERSION},
          {"onetbb", fmt::format("{}.{}", TBB_VERSION_MAJOR, TBB_VERSION_MINOR)},
          {"xxhash", fmt::format("{}.{}.{}", xxh / 10000, xxh / 100 % 100, xxh % 100)}};
}

std::vector<std::string> builtin_datasets(const std::string& root) {
  GenConfig g;
  g.out = root;
  g.sizes = {256, 512, 1024};
  g.classes = 10;
  g.per_class = 40;
  g.force = true;  // the command's own folder: remade over an older version's default
  fmt::print(
      "# no dataset given: using the built-in default in {} (stoker gen {} --sizes "
      "256,512,1024 --classes {} --per-class {} --seed {}; made once, then reused)\n",
      g.out, g.out, g.classes, g.per_class, g.seed);
  std::fflush(stdout);
  return generate_dataset(g).roots;
}

}  // namespace stoker
