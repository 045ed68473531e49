// SPDX-License-Identifier: Apache-2.0
#include "loader/bad_samples.h"

#include <cstdio>

#include "common/error.h"

namespace stoker {

ErrorPolicy parse_error_policy(const std::string& s) {
  if (s == "skip") return ErrorPolicy::skip;
  if (s == "fail") return ErrorPolicy::fail;
  fail("unknown --on-error policy '{}': expected skip or fail", s);
}

const char* error_policy_name(ErrorPolicy p) {
  return p == ErrorPolicy::skip ? "skip" : "fail";
}

BadSamples::BadSamples(size_t dataset_size, bool warn_on_stderr)
    : flags_(new std::atomic<uint64_t>[(dataset_size + 63) / 64]()), warn_(warn_on_stderr) {}

void BadSamples::add(uint32_t index, const std::string& path, const std::string& reason) {
  const uint64_t bit = uint64_t{1} << (index % 64);
  if (flags_[index / 64].fetch_or(bit) & bit) return;  // already reported
  std::lock_guard lock(mu_);
  list_.push_back({index, path, reason});
  if (warn_) {
    std::fprintf(stderr, "stoker: warning: skipping sample %u: %s\n", index, reason.c_str());
  }
}

std::vector<BadSample> BadSamples::list() const {
  std::lock_guard lock(mu_);
  return list_;
}

size_t BadSamples::count() const {
  std::lock_guard lock(mu_);
  return list_.size();
}

}  // namespace stoker
