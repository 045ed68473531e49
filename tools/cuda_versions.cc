// SPDX-License-Identifier: Apache-2.0
// stoker-cuda-versions: the version each CUDA library reports about itself, for the GPU
// bundle's launcher (scripts/gpu_run.sh), which compares them with the versions Stoker was
// linked against. It loads each file with dlopen and calls the library's own version
// function, so it needs no CUDA at build time and no GPU at run time; it links only libc.
//   stoker-cuda-versions FILE...   ->  one line per file: "FILE VERSION" or "FILE ? reason"
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace {

// major*1000 + minor*10 (cudaRuntimeGetVersion, cuDriverGetVersion) as "13.0".
std::string cuda_style(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}
// major*10000 + minor*100 + patch (cuDNN 9, NCCL >= 2.9) as "9.19.0".
std::string triple(long v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

// The version `handle` reports, from whichever version function it exports; "" if none.
std::string version_of(void* handle) {
  using IntOut = int (*)(int*);
  if (auto f = reinterpret_cast<IntOut>(dlsym(handle, "cudaRuntimeGetVersion"))) {
    int v = 0;
    return f(&v) == 0 ? cuda_style(v) : "";
  }
  if (auto f = reinterpret_cast<IntOut>(dlsym(handle, "cuDriverGetVersion"))) {
    int v = 0;
    return f(&v) == 0 ? cuda_style(v) : "";
  }
  if (auto f = reinterpret_cast<size_t (*)()>(dlsym(handle, "cudnnGetVersion")))
    return triple(static_cast<long>(f()));
  if (auto f = reinterpret_cast<IntOut>(dlsym(handle, "ncclGetVersion"))) {
    int v = 0;
    return f(&v) == 0 ? triple(v) : "";
  }
  // cublasGetProperty(libraryPropertyType: 0 major, 1 minor, 2 patch, int*); cuBLASLt likewise.
  for (const char* name : {"cublasGetProperty", "cublasLtGetProperty"}) {
    if (auto f = reinterpret_cast<int (*)(int, int*)>(dlsym(handle, name))) {
      int p[3] = {0, 0, 0};
      for (int i = 0; i < 3; ++i) {
        if (f(i, &p[i]) != 0) return "";
      }
      return std::to_string(p[0]) + "." + std::to_string(p[1]) + "." + std::to_string(p[2]);
    }
  }
  // nvrtcVersion(int* major, int* minor), as "13.0" (the cuDNN frontend's run-time kernels).
  if (auto f = reinterpret_cast<int (*)(int*, int*)>(dlsym(handle, "nvrtcVersion"))) {
    int major = 0, minor = 0;
    return f(&major, &minor) == 0 ? std::to_string(major) + "." + std::to_string(minor) : "";
  }
  if (auto f = reinterpret_cast<int (*)(uint32_t*)>(dlsym(handle, "cuptiGetVersion"))) {
    uint32_t v = 0;
    return f(&v) == 0 ? std::to_string(v) : "";  // CUPTI_API_VERSION, a plain integer
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: stoker-cuda-versions FILE...\n");
    return 2;
  }
  int failed = 0;
  for (int i = 1; i < argc; ++i) {
    void* h = dlopen(argv[i], RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
      std::printf("%s ? %s\n", argv[i], dlerror());
      ++failed;
      continue;
    }
    const std::string v = version_of(h);
    std::printf("%s %s\n", argv[i], v.empty() ? "? no version function answered" : v.c_str());
    failed += v.empty();
  }
  return failed ? 1 : 0;
}
