// SPDX-License-Identifier: Apache-2.0
#include "loader/bad_samples.h"

#include <fmt/format.h>

#include "common/error.h"
#include "common/log.h"

namespace stoker {

ErrorPolicy parse_error_policy(const std::string& s) {
  if (s == "skip") return ErrorPolicy::skip;
  if (s == "fail") return ErrorPolicy::fail;
  fail("unknown --on-error policy '{}': expected skip or fail", s);
}

const char* error_policy_name(ErrorPolicy p) {
  return p == ErrorPolicy::skip ? "skip" : "fail";
}

void BadSamples::add(uint32_t index, const std::string& path, const std::string& reason,
                     FailurePoint where) {
  std::lock_guard lock(mu_);
  auto [it, added] = bad_.try_emplace(index, Entry{where, path, reason});
  if (!added && where < it->second.first) it->second = Entry{where, path, reason};
  if (added && warn_) {
    log_warning(fmt::format("skipping sample {}: {}", index, reason));
  }
}

std::vector<BadSample> BadSamples::list() const {
  std::lock_guard lock(mu_);
  std::vector<BadSample> out;
  out.reserve(bad_.size());
  for (const auto& [index, e] : bad_) out.push_back({index, e.path, e.reason});
  return out;
}

size_t BadSamples::count() const {
  std::lock_guard lock(mu_);
  return bad_.size();
}

}  // namespace stoker
