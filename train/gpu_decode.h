// SPDX-License-Identifier: Apache-2.0
// --decode gpu for the trainer, without device types: a feed that hands the loader's batches
// to the GPU decoder (augment/gpu/cuda/) which writes them straight into the backend's input.
// Built with CUDA and nvJPEG's header; elsewhere the factory says what the build lacks.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "train/loader_feed.h"
#include "train/train_loop.h"

namespace stoker {

struct GpuDecodeOptions {
  size_t decode_memory = size_t(1) << 30;  // device bytes for decoded windows (--decode-memory)
  bool hardware = true;                    // nvJPEG's hardware engine where the GPU has one
};

// What a GPU-decode feed did, for the JSON summary (docs/FORMATS.md, "gpu_decode").
struct GpuDecodeReport {
  std::string decoder;  // nvJPEG's version, backend and library
  uint64_t batches = 0, hardware = 0, hybrid = 0, whole_image = 0, engine_cpu = 0, failed = 0;
  uint64_t loader_cpu = 0;         // samples the loader's CPU decoded (every reason)
  std::string loader_cpu_reasons;  // "progressive=3 not_jpeg=1", reasons with counts
  uint64_t parts = 0;
  double host_s = 0;
};

class GpuDecodeFeed : public BatchFeed {
 public:
  virtual GpuDecodeReport report() const = 0;
};

// A feed over `inner` (whose loader runs with decode_device gpu) decoding into `backend`'s
// device_stage(). stoker::Error when this build or machine cannot: no CUDA, no nvJPEG, a
// backend without device staging.
std::unique_ptr<GpuDecodeFeed> make_gpu_decode_feed(LoaderFeed& inner, Backend& backend,
                                                    const GpuDecodeOptions& options);
// Whether this build has GPU decode at all (CUDA and nvJPEG's header found).
bool gpu_decode_built();
// Why GPU decode cannot run here (no build support, no nvJPEG library, no CUDA device), or
// empty when it can.
std::string gpu_decode_unavailable();

}  // namespace stoker
