// SPDX-License-Identifier: Apache-2.0
// The two error channels. STOKER_CHECK is for broken invariants (a bug in Stoker): it
// aborts with file:line and the expression. stoker::Error is for bad input or environment:
// its message names the file/sample/device, what was expected, what was found, and a hint.
// stoker::UsageError is the Error of a command line that asks for nonsense (an option's
// value, or options that exclude each other): `stoker` exits 2 for it, 1 for other Errors.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace stoker {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A command line that cannot mean anything: the message names the option(s) and what they
// accept.
class UsageError : public Error {
 public:
  using Error::Error;
};

template <class... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

template <class... Args>
[[noreturn]] void usage_fail(fmt::format_string<Args...> f, Args&&... args) {
  throw UsageError(fmt::format(f, std::forward<Args>(args)...));
}

// strerror for an errno value, thread-safe.
std::string errno_text(int err);

[[noreturn]] void check_failed(const char* file, int line, const char* expr,
                               const std::string& msg);

}  // namespace stoker

#define STOKER_CHECK(cond)                                              \
  do {                                                                  \
    if (!(cond)) [[unlikely]]                                           \
      ::stoker::check_failed(__FILE__, __LINE__, #cond, std::string()); \
  } while (0)

#define STOKER_CHECK_MSG(cond, ...)                                                \
  do {                                                                             \
    if (!(cond)) [[unlikely]]                                                      \
      ::stoker::check_failed(__FILE__, __LINE__, #cond, fmt::format(__VA_ARGS__)); \
  } while (0)
