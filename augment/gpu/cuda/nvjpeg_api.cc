// SPDX-License-Identifier: Apache-2.0
#include "augment/gpu/cuda/nvjpeg_api.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

#include "common/error.h"

namespace stoker::gpu {
namespace {

constexpr const char* kSoname = "libnvjpeg.so.13";

std::string self_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

NvjpegApi load() {
  std::vector<std::string> tried;
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("STOKER_NVJPEG"); env && *env) candidates.push_back(env);
#ifdef STOKER_NVJPEG_BUILD_DIR
  candidates.push_back(std::string(STOKER_NVJPEG_BUILD_DIR) + "/" + kSoname);
#endif
  if (const std::string d = self_dir(); !d.empty()) candidates.push_back(d + "/../lib/" + kSoname);
  candidates.push_back(kSoname);  // LD_LIBRARY_PATH, the loader's cache
  void* lib = nullptr;
  NvjpegApi api;
  for (const std::string& c : candidates) {
    lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      api.path = c;
      break;
    }
    const char* why = dlerror();
    tried.push_back(fmt::format("{} ({})", c, why ? why : "not found"));
  }
  if (!lib)
    fail(
        "--decode gpu: cannot load nvJPEG; tried {}. Install the wheel scripts/deps.sh fetches "
        "(nvidia-nvjpeg) or set STOKER_NVJPEG to libnvjpeg.so.13",
        fmt::join(tried, "; "));
#define STOKER_NVJPEG_FN(name)                                        \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(lib, #name)); \
  if (!api.name) fail("--decode gpu: {} has no {} (nvJPEG too old?)", api.path, #name);
#include "augment/gpu/cuda/nvjpeg_functions.inc"
#undef STOKER_NVJPEG_FN
  api.nvjpegGetProperty(MAJOR_VERSION, &api.major);
  api.nvjpegGetProperty(MINOR_VERSION, &api.minor);
  api.nvjpegGetProperty(PATCH_LEVEL, &api.patch);
  return api;  // the library stays loaded for the process
}

}  // namespace

const NvjpegApi& nvjpeg() {
  static std::once_flag once;
  static NvjpegApi api;
  static std::string error;
  std::call_once(once, [] {
    try {
      api = load();
    } catch (const Error& e) {
      error = e.what();
    }
  });
  if (!error.empty()) throw Error(error);
  return api;
}

const char* nvjpeg_status_name(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS:
      return "NVJPEG_STATUS_SUCCESS";
    case NVJPEG_STATUS_NOT_INITIALIZED:
      return "NVJPEG_STATUS_NOT_INITIALIZED";
    case NVJPEG_STATUS_INVALID_PARAMETER:
      return "NVJPEG_STATUS_INVALID_PARAMETER";
    case NVJPEG_STATUS_BAD_JPEG:
      return "NVJPEG_STATUS_BAD_JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
      return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
      return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case NVJPEG_STATUS_EXECUTION_FAILED:
      return "NVJPEG_STATUS_EXECUTION_FAILED";
    case NVJPEG_STATUS_ARCH_MISMATCH:
      return "NVJPEG_STATUS_ARCH_MISMATCH";
    case NVJPEG_STATUS_INTERNAL_ERROR:
      return "NVJPEG_STATUS_INTERNAL_ERROR";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
      return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
      return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
  }
  return "unknown nvjpegStatus_t";
}

void check(nvjpegStatus_t status, const char* call, const char* file, int line) {
  if (status == NVJPEG_STATUS_SUCCESS) return;
  fail("nvJPEG: {} failed: {} ({}) at {}:{}", call, nvjpeg_status_name(status), int(status), file,
       line);
}

}  // namespace stoker::gpu
