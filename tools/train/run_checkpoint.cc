// SPDX-License-Identifier: Apache-2.0
#include "tools/train/run_checkpoint.h"

#include <fmt/format.h>

#include <ctime>
#include <filesystem>

namespace stoker {

std::string default_checkpoint_path(const std::string& arch) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  const std::string stem = fmt::format("runs/{}-{}", arch, stamp);
  std::string path = stem + ".safetensors";
  for (int k = 2; std::filesystem::exists(path); ++k)
    path = fmt::format("{}-{}.safetensors", stem, k);
  return path;
}

}  // namespace stoker
