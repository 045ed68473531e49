// SPDX-License-Identifier: Apache-2.0
#include "tools/cache_dir.h"

#include <cstdlib>

namespace stoker {

std::string stoker_cache_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/stoker";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.cache/stoker";
  return "stoker-cache";
}

}  // namespace stoker
