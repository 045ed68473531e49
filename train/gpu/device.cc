// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/device.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

namespace stoker::gpu {

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return 0;
  }
  return count;
}

std::string device_unavailable_reason(int device) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return fmt::format("no CUDA device: cudaGetDeviceCount: {} ({})", cudaGetErrorString(status),
                       cudaGetErrorName(status));
  }
  if (count == 0) return "no CUDA device: the CUDA runtime sees none";
  if (device < 0 || device >= count)
    return fmt::format("CUDA device {} does not exist: this machine has {} (0..{})", device, count,
                       count - 1);
  return {};
}

}  // namespace stoker::gpu
