// SPDX-License-Identifier: Apache-2.0
// nvJPEG, loaded at run time (dlopen): the CUDA toolkit here has no nvJPEG, which comes from
// its own PyPI wheel (nvidia-nvjpeg, scripts/deps.sh), and a binary that links it would not
// start where it is absent. Only --decode gpu loads it; every entry point is typed from the
// real nvjpeg.h. check() turns a status into a stoker::Error naming the call.
#pragma once

#include <nvjpeg.h>

#include <string>

namespace stoker::gpu {

struct NvjpegApi {
#define STOKER_NVJPEG_FN(name) decltype(&::name) name = nullptr;
#include "augment/gpu/cuda/nvjpeg_functions.inc"
#undef STOKER_NVJPEG_FN
  std::string path;  // the library file loaded
  int major = 0, minor = 0, patch = 0;
};

// Loads libnvjpeg.so.13 once per process, looking at $STOKER_NVJPEG (a file), then the
// directory this build found it in, then next to the binary (../lib: the GPU bundle), then
// the loader's default path. stoker::Error naming every place tried.
const NvjpegApi& nvjpeg();

const char* nvjpeg_status_name(nvjpegStatus_t s);
void check(nvjpegStatus_t status, const char* call, const char* file, int line);

}  // namespace stoker::gpu

#define STOKER_NVJPEG(call) ::stoker::gpu::check((call), #call, __FILE__, __LINE__)
