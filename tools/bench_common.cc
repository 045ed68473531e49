// SPDX-License-Identifier: Apache-2.0
#include "tools/bench_common.h"

#include <tbb/version.h>
#include <xxhash.h>
#include <opencv2/core/version.hpp>

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include <ctime>
#include <memory>

#include "common/error.h"
#include "loader/index.h"
#include "loader/nfs_url.h"
#include "loader/source.h"

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

void warm_page_cache(const Index& index) {
  if (index.root.rfind("nfs://", 0) == 0) return;
  const std::unique_ptr<Source> source = make_pread_source({});
  tbb::parallel_for(size_t{0}, index.size(), [&](size_t i) {
    thread_local std::unique_ptr<Source> mine;
    if (!mine) mine = source->clone();
    ReadBuffer buf;
    std::string scratch;
    try {
      mine->read(locate_sample(index, i, scratch), buf);
    } catch (const Error&) {
      // Reported by the run itself, under the on-error policy.
    }
  });
}

// Versions are strings, xxhash's too: "0.8.1" (its number is 801).
nlohmann::json library_versions() {
  const unsigned xxh = XXH_versionNumber();
  return {{"libjpeg-turbo", STOKER_LIBJPEG_TURBO_VERSION},
          {"opencv", CV_VERSION},
          {"onetbb", fmt::format("{}.{}", TBB_VERSION_MAJOR, TBB_VERSION_MINOR)},
          {"xxhash", fmt::format("{}.{}.{}", xxh / 10000, xxh / 100 % 100, xxh % 100)}};
}

}  // namespace stoker
