// SPDX-License-Identifier: Apache-2.0
#include "common/error.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace stoker {

std::string errno_text(int err) {
  char buf[256];
  // GNU strerror_r returns the message pointer (may or may not be buf).
  return strerror_r(err, buf, sizeof buf);
}

void check_failed(const char* file, int line, const char* expr, const std::string& msg) {
  std::fprintf(stderr, "stoker: internal check failed at %s:%d: %s%s%s\n", file, line, expr,
               msg.empty() ? "" : ": ", msg.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace stoker
