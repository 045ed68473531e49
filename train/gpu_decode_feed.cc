// SPDX-License-Identifier: Apache-2.0
// train/gpu_decode.h's feed: the loader's batch in, nvJPEG and the resize kernels on the
// backend's copy stream, the batch out as on_device.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdio>
#include <utility>

#include "augment/gpu/cuda/gpu_decoder.h"
#include "augment/gpu/cuda/nvjpeg_api.h"
#include "common/error.h"
#include "loader/iterator.h"
#include "train/gpu_decode.h"

namespace stoker {
namespace {

// The decoder on the backend's device, waiting as the backend waits.
gpu::GpuDecodeConfig decoder_config(const Backend& backend, const GpuDecodeOptions& o) {
  if (!backend.caps().device_input)
    fail("--decode gpu: the {} backend takes no batches from the device", backend.describe());
  DeviceProducer p = backend.device_producer();
  return {p.device, o.decode_memory, o.hardware, std::move(p.wait)};
}

class DecodeFeed final : public GpuDecodeFeed {
 public:
  DecodeFeed(LoaderFeed& inner, Backend& backend, const GpuDecodeOptions& o)
      : inner_(inner), backend_(backend), decoder_(decoder_config(backend, o)) {
    const LoaderConfig& c = inner.iterator().config();
    if (c.decode_device != DecodeDevice::gpu)
      fail("GPU decode feed: the loader was not configured with --decode gpu");
    OutputSpec f32 = c.output;
    f32.dtype = DType::f32;
    out_.lut = Normalizer(f32).lut;  // ToTensor + Normalize's float32 values, the CPU's
  }

  HostBatch next() override {
    HostBatch hb = inner_.next();
    const Batch& b = *inner_.last_batch();
    // The slot must be of the batch's size: re-plan first where a size schedule or a
    // validation at its own size changed it (the loop's reshape is then a no-op; the time
    // counts as this batch's wait).
    if (hb.height > 0) backend_.reshape(hb.height, hb.width);
    const DeviceStage stage = backend_.device_stage();  // device_input: checked at the start
    out_.dtype = stage.dtype;
    out_.layout = stage.layout;
    const std::vector<size_t> failed =
        decoder_.decode({b.encoded.data(), b.size}, b.arena->data,
                        static_cast<const uint8_t*>(b.data), out_, stage.images, stage.stream);
    for (size_t i : failed) {
      const std::string name = inner_.iterator().index().path(b.indices[i]);
      if (inner_.iterator().config().on_error == ErrorPolicy::fail)
        fail("{}: no decoder could decode it (nvJPEG and libjpeg-turbo refused its data)", name);
      std::fprintf(stderr, "warning: %s: undecodable on the GPU and the CPU; zeros in its place\n",
                   name.c_str());
    }
    hb.on_device = true;
    hb.images = nullptr;
    return hb;
  }

  std::span<const SampleTiming> timings() const override { return inner_.timings(); }

  GpuDecodeReport report() const override {
    const gpu::GpuDecodeCounts& c = decoder_.counts();
    GpuDecodeReport r{decoder_.describe(),
                      c.batches,
                      c.hardware,
                      c.hybrid,
                      c.whole_image,
                      c.engine_cpu,
                      c.failed,
                      0,
                      {},
                      c.parts,
                      c.host_s};
    for (size_t k = 0; k < c.loader_cpu.size(); ++k) {
      if (c.loader_cpu[k] == 0) continue;
      r.loader_cpu += c.loader_cpu[k];
      r.loader_cpu_reasons += fmt::format("{}{}={}", r.loader_cpu_reasons.empty() ? "" : " ",
                                          decoded_on_name(DecodedOn(k)), c.loader_cpu[k]);
    }
    return r;
  }

 private:
  LoaderFeed& inner_;
  Backend& backend_;
  gpu::GpuDecoder decoder_;
  ResizeOutput out_;
};

}  // namespace

std::unique_ptr<GpuDecodeFeed> make_gpu_decode_feed(LoaderFeed& inner, Backend& backend,
                                                    const GpuDecodeOptions& options) {
  return std::make_unique<DecodeFeed>(inner, backend, options);
}

bool gpu_decode_built() {
  return true;
}

std::string gpu_decode_unavailable() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return "no CUDA device";
  try {
    gpu::nvjpeg();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace stoker
