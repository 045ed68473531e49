// SPDX-License-Identifier: Apache-2.0
// The on-error policy's record: which files failed, why, and how many replacements were
// made. Write-only during an epoch (no reader consults it to decide anything), so what it
// holds after an epoch is a function of the seed, the epoch and the files alone: each file is
// listed once, with the reason from its first failure in epoch order (smallest epoch,
// position, attempt), whichever loader thread happened to meet it first.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
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

// Where in an epoch a failure happened: slot position `pos`, the slot's `attempt`-th candidate.
struct FailurePoint {
  uint64_t epoch = 0, pos = 0, attempt = 0;
  auto operator<=>(const FailurePoint&) const = default;
};

class BadSamples {
 public:
  explicit BadSamples(bool warn_on_stderr) : warn_(warn_on_stderr) {}
  // Records a failure at `where`; warns once per file. Thread-safe.
  void add(uint32_t index, const std::string& path, const std::string& reason, FailurePoint where);
  // Sorted by index.
  std::vector<BadSample> list() const;
  size_t count() const;
  // Replacements made: for each filled slot, the candidates before the one that filled it
  // (a bad file met by several slots counts once per slot), in the batches the Iterator has
  // delivered (a batch prepared ahead and dropped by a reader switch does not count).
  std::atomic<uint64_t> skipped{0};

 private:
  struct Entry {
    FailurePoint first;
    std::string path, reason;
  };
  bool warn_;
  mutable std::mutex mu_;
  std::map<uint32_t, Entry> bad_;
};

}  // namespace stoker
