// SPDX-License-Identifier: Apache-2.0
// The skip rule of the GoogleTest tests, as tests/skip_policy.{py,sh} for the scripts: a skip
// for something the set-up installs (a failure where every oracle is required), or an honest
// skip of a kind listed in tests/honest_skips.txt (tagged "SKIP[kind]:", a skip everywhere).
// GTEST_SKIP is used nowhere else (ctest skip_policy_lint).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace stoker::test {

// Under CI=true, or STOKER_REQUIRE_ORACLES=1 (scripts/test.sh sets it), whatever
// scripts/deps.sh --test installs (oracles, tools, libraries, test images) must be there: a
// test that misses one fails instead of skipping, so a half-skipped run cannot look green.
inline bool require_oracles() {
  const char* ci = std::getenv("CI");
  const char* req = std::getenv("STOKER_REQUIRE_ORACLES");
  return (ci && std::string(ci) == "true") || (req && std::string(req) == "1");
}

// In a test body or SetUp(): `reason` names what is missing and the package that has it.
// A skip where it may be missing; a failure where the set-up must have installed it.
#define STOKER_SKIP_IF_OPTIONAL(reason)                                            \
  do {                                                                             \
    if (::stoker::test::require_oracles()) {                                       \
      FAIL() << "required here (CI=true or STOKER_REQUIRE_ORACLES=1): " << reason; \
    }                                                                              \
    GTEST_SKIP() << reason;                                                        \
  } while (0)

}  // namespace stoker::test

// A skip that stays a skip where every oracle is required: `kind` (a string literal) is one
// of tests/honest_skips.txt (no-cuda-device, no-io-uring, no-o-direct, not-applicable); the
// tag lets scripts/test.sh and skip_policy.py --lint tell it from the others.
#define STOKER_SKIP_HONEST(kind, reason) GTEST_SKIP() << "SKIP[" kind "]: " << reason

// What is missing is a device (`why` from device_unavailable_reason says "no CUDA device":
// honest) or something the set-up installs (optional: a failure where oracles are required).
#define STOKER_SKIP_UNAVAILABLE(why)                        \
  do {                                                      \
    const std::string why_ = (why);                         \
    if (why_.find("no CUDA device") != std::string::npos) { \
      STOKER_SKIP_HONEST("no-cuda-device", why_);           \
    }                                                       \
    STOKER_SKIP_IF_OPTIONAL(why_);                          \
  } while (0)
