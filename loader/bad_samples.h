// SPDX-License-Identifier: Apache-2.0
// The on-error policy and the record of samples that failed: each file is reported once
// (a one-line warning on stderr and an entry in the run's JSON) and is not read again.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace stoker {

enum class ErrorPolicy {
  skip,  // replace the sample by the next one in the epoch, count and list it
  fail,  // stop the run with an error naming the file and the reason
};

ErrorPolicy parse_error_policy(const std::string& s);
const char* error_policy_name(ErrorPolicy p);

struct BadSample {
  uint32_t index;
  std::string path;
  std::string reason;
};

class BadSamples {
 public:
  BadSamples(size_t dataset_size, bool warn_on_stderr);
  bool known_bad(uint32_t index) const {
    return flags_[index / 64].load(std::memory_order_relaxed) & (uint64_t{1} << (index % 64));
  }
  // Records a failure; warns once per file. Thread-safe.
  void add(uint32_t index, const std::string& path, const std::string& reason);
  std::vector<BadSample> list() const;
  size_t count() const;
  // Failed attempts at filling a slot: each time a bad sample was met, including a known
  // bad file met again in a later epoch or by a neighbouring slot's replacement search.
  std::atomic<uint64_t> skipped{0};

 private:
  std::unique_ptr<std::atomic<uint64_t>[]> flags_;
  bool warn_;
  mutable std::mutex mu_;
  std::vector<BadSample> list_;
};

}  // namespace stoker
