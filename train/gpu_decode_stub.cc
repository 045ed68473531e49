// SPDX-License-Identifier: Apache-2.0
// train/gpu_decode.h in a build without CUDA or without nvJPEG's header.
#include "common/error.h"
#include "train/gpu_decode.h"

namespace stoker {

std::unique_ptr<GpuDecodeFeed> make_gpu_decode_feed(LoaderFeed&, Backend&,
                                                    const GpuDecodeOptions&) {
  fail(
      "--decode gpu: this build has no GPU decode (it needs the CUDA toolkit and nvJPEG's "
      "header, which scripts/deps.sh fetches from PyPI's nvidia-nvjpeg)");
}

bool gpu_decode_built() {
  return false;
}

std::string gpu_decode_unavailable() {
  return "this build has no GPU decode (no CUDA toolkit or no nvjpeg.h)";
}

}  // namespace stoker
