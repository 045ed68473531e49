// SPDX-License-Identifier: Apache-2.0
// The GPU half of --decode gpu: a batch the loader prepared (augment/gpu/encoded_sample.h:
// files' bytes and crop windows, or CPU-decoded pixels) decoded by nvJPEG and resized,
// flipped and normalised by our kernels straight into a device tensor in the trainer's dtype
// and layout. nvJPEG's hardware engine (A100, H100, H200) decodes batches, the crop window
// alone where it can (ROI); where there is no engine, or it refuses a file, the hybrid
// backend decodes it; what nvJPEG refuses altogether the CPU decodes here (libjpeg-turbo,
// the same window), counted. Device memory for decoded windows is bounded by the
// configuration: a batch that needs more is decoded in parts.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "augment/gpu/encoded_sample.h"
#include "augment/gpu/resize_job.h"

namespace stoker::gpu {

struct GpuDecodeConfig {
  int device = 0;  // the backend's (DeviceProducer): nvJPEG's handles are bound to it
  size_t decode_memory = size_t(1) << 30;  // bytes for decoded windows and intermediate rows
  bool hardware = true;                    // use the hardware engine where the GPU has one
  // How the decoder's host waits wait for an event (a cudaEvent_t): the backend's, which polls
  // a data-parallel collective (DeviceProducer::wait). Empty: cudaEventSynchronize.
  std::function<void(void* event)> wait;
};

struct GpuDecodeCounts {
  uint64_t batches = 0;
  uint64_t hardware = 0;     // samples the hardware engine decoded
  uint64_t hybrid = 0;       // samples nvJPEG's hybrid (CPU Huffman + GPU IDCT) backend decoded
  uint64_t whole_image = 0;  // of those, decoded whole because the window alone was refused
  uint64_t engine_cpu = 0;   // samples nvJPEG refused, decoded here by libjpeg-turbo
  uint64_t failed = 0;       // samples no decoder could decode (zeros written, named)
  // The loader's CPU fallbacks by reason (DecodedOn), as the batches said.
  std::array<uint64_t, size_t(DecodedOn::kDecodedOnCount)> loader_cpu{};
  uint64_t parts = 0;  // sub-batches (more than batches: decode memory was short)
  double host_s = 0;   // host seconds inside decode() (parsing, enqueueing, fallbacks)
};

class GpuDecoder {
 public:
  explicit GpuDecoder(const GpuDecodeConfig& config);
  ~GpuDecoder();
  GpuDecoder(const GpuDecoder&) = delete;
  GpuDecoder& operator=(const GpuDecoder&) = delete;

  // Enqueues on `stream` (a cudaStream_t, of config.device; the calling thread's current
  // device is left as it was) the decode of `samples` into `dst` (device memory;
  // sample i at element i x 3 x out_h x out_w, every sample of the batch one size), in
  // out.dtype and layout, normalised by out.lut. arena: the batch's bytes (host memory,
  // pinned for speed); cpu_pixels: its u8 NHWC tensor (the CPU-decoded samples). Both must
  // stay unchanged until the stream has passed this work. Returns the positions of samples
  // no decoder could decode (written as zeros), for the caller's on-error policy.
  std::vector<size_t> decode(std::span<const EncodedSample> samples, const uint8_t* arena,
                             const uint8_t* cpu_pixels, const ResizeOutput& out, void* dst,
                             void* stream);

  const GpuDecodeCounts& counts() const;
  // "nvJPEG 13.0.4 hardware engine" or "... hybrid backend (no hardware engine)", with the
  // flags nvJPEG accepted (strict bitstreams, interpolated chroma upsampling).
  std::string describe() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stoker::gpu
