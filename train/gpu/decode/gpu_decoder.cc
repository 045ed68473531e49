// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/decode/gpu_decoder.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstring>

#include "augment/decoder.h"
#include "augment/gpu/window_decode.h"
#include "augment/resize_antialias.h"
#include "common/clock.h"
#include "common/error.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/decode/decode_parts.h"
#include "train/gpu/decode/nvjpeg_api.h"
#include "train/gpu/decode/resize_kernels.h"
#include "train/gpu/gpu_memory.h"

namespace stoker::gpu {
namespace {

// A device buffer that grows (never shrinks) after the stream has finished with it.
void ensure(DeviceBuffer& b, size_t bytes, cudaStream_t stream) {
  if (b.bytes() >= bytes) return;
  STOKER_GPU(cudaStreamSynchronize(stream));
  b = DeviceBuffer(bytes + bytes / 2);
}

}  // namespace

struct GpuDecoder::Impl {
  using Part = DecodePart;

  GpuDecodeConfig config;
  const NvjpegApi& nj;
  nvjpegHandle_t handle = nullptr, hybrid_handle = nullptr;
  bool hw = false;
  nvjpegJpegState_t batched = nullptr;
  int batched_size = 0;
  nvjpegJpegDecoder_t hybrid = nullptr;
  nvjpegJpegState_t hybrid_state = nullptr;
  nvjpegBufferPinned_t hybrid_pinned = nullptr;
  nvjpegBufferDevice_t hybrid_device = nullptr;
  std::vector<nvjpegJpegStream_t> streams;
  std::vector<nvjpegDecodeParams_t> params;
  DeviceBuffer work, jobs, taps, lut;
  PinnedBuffer staging;  // jobs, taps, lut and CPU-decoded pixels on their way up
  cudaEvent_t staged = nullptr;
  Decoder cpu{[] {
    DecodeOptions o;
    o.allow_dct_scaling = false;
    return o;
  }()};
  cv::Mat window, resized;
  GpuDecodeCounts counts;

  explicit Impl(const GpuDecodeConfig& c) : config(c), nj(nvjpeg()) {
    STOKER_GPU(cudaSetDevice(c.device));
    if (c.hardware)
      hw = nj.nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, 0, &handle) ==
           NVJPEG_STATUS_SUCCESS;
    if (!hw) STOKER_NVJPEG(nj.nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, 0, &handle));
    if (hw) STOKER_NVJPEG(nj.nvjpegJpegStateCreate(handle, &batched));
    // The hybrid decoder from the same handle where nvJPEG allows it, else from a default one.
    hybrid_handle = handle;
    if (nj.nvjpegDecoderCreate(handle, NVJPEG_BACKEND_HYBRID, &hybrid) != NVJPEG_STATUS_SUCCESS) {
      STOKER_NVJPEG(nj.nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, 0, &hybrid_handle));
      STOKER_NVJPEG(nj.nvjpegDecoderCreate(hybrid_handle, NVJPEG_BACKEND_HYBRID, &hybrid));
    }
    STOKER_NVJPEG(nj.nvjpegDecoderStateCreate(hybrid_handle, hybrid, &hybrid_state));
    STOKER_NVJPEG(nj.nvjpegBufferPinnedCreate(hybrid_handle, nullptr, &hybrid_pinned));
    STOKER_NVJPEG(nj.nvjpegBufferDeviceCreate(hybrid_handle, nullptr, &hybrid_device));
    STOKER_NVJPEG(nj.nvjpegStateAttachPinnedBuffer(hybrid_state, hybrid_pinned));
    STOKER_NVJPEG(nj.nvjpegStateAttachDeviceBuffer(hybrid_state, hybrid_device));
    work = DeviceBuffer(c.decode_memory);
    lut = DeviceBuffer(3 * 256 * sizeof(float));
    STOKER_GPU(cudaEventCreateWithFlags(&staged, cudaEventDisableTiming));
  }

  ~Impl() {
    if (staged) cudaEventSynchronize(staged);
    for (auto s : streams) nj.nvjpegJpegStreamDestroy(s);
    for (auto p : params) nj.nvjpegDecodeParamsDestroy(p);
    if (hybrid_state) nj.nvjpegJpegStateDestroy(hybrid_state);
    if (hybrid_pinned) nj.nvjpegBufferPinnedDestroy(hybrid_pinned);
    if (hybrid_device) nj.nvjpegBufferDeviceDestroy(hybrid_device);
    if (hybrid) nj.nvjpegDecoderDestroy(hybrid);
    if (batched) nj.nvjpegJpegStateDestroy(batched);
    if (hybrid_handle && hybrid_handle != handle) nj.nvjpegDestroy(hybrid_handle);
    if (handle) nj.nvjpegDestroy(handle);
    if (staged) cudaEventDestroy(staged);
  }

  // Stream and params objects for the k-th sample of a part.
  void reserve_slots(size_t k) {
    while (streams.size() <= k) {
      nvjpegJpegStream_t s = nullptr;
      nvjpegDecodeParams_t p = nullptr;
      STOKER_NVJPEG(nj.nvjpegJpegStreamCreate(handle, &s));
      streams.push_back(s);
      STOKER_NVJPEG(nj.nvjpegDecodeParamsCreate(handle, &p));
      STOKER_NVJPEG(nj.nvjpegDecodeParamsSetOutputFormat(p, NVJPEG_OUTPUT_RGBI));
      // Pixels as stored, as libjpeg-turbo (and so CPU decode) gives them: no EXIF rotation.
      STOKER_NVJPEG(nj.nvjpegDecodeParamsSetExifOrientation(p, NVJPEG_ORIENTATION_NORMAL));
      params.push_back(p);
    }
  }

  bool set_roi(nvjpegDecodeParams_t p, const EncodedSample& e, bool window) {
    return window ? nj.nvjpegDecodeParamsSetROI(p, e.region.x, e.region.y, e.region.w,
                                                e.region.h) == NVJPEG_STATUS_SUCCESS
                  : nj.nvjpegDecodeParamsSetROI(p, 0, 0, -1, -1) == NVJPEG_STATUS_SUCCESS;
  }

  // Which decoder takes GPU sample e (its bytes parsed into streams[k]) and the shape of its
  // decoded pixels: the window alone (ROI) where the decoder accepts it, else the image.
  Route choose(const EncodedSample& e, const uint8_t* bytes, size_t k, DecodedPlace& place) {
    nvjpegJpegStream_t s = streams[k];
    nvjpegDecodeParams_t p = params[k];
    for (bool window : {true, false}) {
      place = window ? window_place(e, 0) : image_place(e, 0);
      int unsupported = 1;
      if (hw &&
          nj.nvjpegJpegStreamParseHeader(handle, bytes, e.length, s) == NVJPEG_STATUS_SUCCESS &&
          set_roi(p, e, window) &&
          nj.nvjpegDecodeBatchedSupportedEx(handle, s, p, &unsupported) == NVJPEG_STATUS_SUCCESS &&
          unsupported == 0)
        return Route::hardware;
    }
    for (bool window : {true, false}) {
      place = window ? window_place(e, 0) : image_place(e, 0);
      int unsupported = 1;
      if (nj.nvjpegJpegStreamParse(hybrid_handle, bytes, e.length, 0, 0, s) ==
              NVJPEG_STATUS_SUCCESS &&
          set_roi(p, e, window) &&
          nj.nvjpegDecoderJpegSupported(hybrid, s, p, &unsupported) == NVJPEG_STATUS_SUCCESS &&
          unsupported == 0)
        return Route::hybrid;
    }
    place = pixels_place(e, 0);
    return Route::cpu;
  }

  std::vector<size_t> decode(std::span<const EncodedSample> samples, const uint8_t* arena,
                             const uint8_t* cpu_pixels, const ResizeOutput& out, void* dst,
                             cudaStream_t stream);
  void run_part(Part& part, std::span<const EncodedSample> samples, const uint8_t* arena,
                const uint8_t* cpu_pixels, const ResizeOutput& out, void* dst, cudaStream_t stream,
                std::vector<size_t>& failed);
  void decode_hardware(Part& part, const uint8_t* arena, std::span<const EncodedSample> samples,
                       cudaStream_t stream);
  bool decode_hybrid(size_t k, const DecodedPlace& place, cudaStream_t stream);
  bool decode_on_cpu(const EncodedSample& e, const uint8_t* bytes, uint8_t* host);
  void upload(const ResizePlan& plan, std::span<const uint8_t> pixels, size_t pixel_offset,
              cudaStream_t stream);
};

bool GpuDecoder::Impl::decode_on_cpu(const EncodedSample& e, const uint8_t* bytes, uint8_t* host) {
  try {
    decode_window_on_cpu(cpu, {bytes, e.length}, e, "sample", window);
    resize_antialias(window, e.out_w, e.out_h, resized);
  } catch (const Error&) {
    return false;
  }
  for (int y = 0; y < resized.rows; ++y)
    std::memcpy(host + size_t(y) * size_t(e.out_w) * 3, resized.ptr<uint8_t>(y),
                size_t(e.out_w) * 3);
  return true;
}

bool GpuDecoder::Impl::decode_hybrid(size_t k, const DecodedPlace& place, cudaStream_t stream) {
  nvjpegImage_t image{};
  image.channel[0] = static_cast<unsigned char*>(work.get()) + place.offset;
  image.pitch[0] = size_t(place.pitch);
  if (nj.nvjpegDecodeJpeg(hybrid_handle, hybrid, hybrid_state, streams[k], &image, params[k],
                          stream) != NVJPEG_STATUS_SUCCESS)
    return false;
  // The state's buffers serve the next image: let this one finish first (the hybrid backend
  // is the rare path where a hardware engine exists).
  STOKER_GPU(cudaStreamSynchronize(stream));
  return true;
}

void GpuDecoder::Impl::decode_hardware(Part& part, const uint8_t* arena,
                                       std::span<const EncodedSample> samples,
                                       cudaStream_t stream) {
  std::vector<const unsigned char*> data;
  std::vector<size_t> lengths, ks;
  std::vector<nvjpegImage_t> images;
  std::vector<nvjpegDecodeParams_t> ps;
  for (size_t k = 0; k < part.index.size(); ++k) {
    if (part.route[k] != Route::hardware) continue;
    const EncodedSample& e = samples[part.index[k]];
    data.push_back(arena + e.offset);
    lengths.push_back(e.length);
    nvjpegImage_t image{};
    image.channel[0] = static_cast<unsigned char*>(work.get()) + part.place[k].offset;
    image.pitch[0] = size_t(part.place[k].pitch);
    images.push_back(image);
    ps.push_back(params[k]);
    ks.push_back(k);
  }
  if (data.empty()) return;
  const int n = int(data.size());
  if (n != batched_size) {
    STOKER_NVJPEG(nj.nvjpegDecodeBatchedInitialize(handle, batched, n, 1, NVJPEG_OUTPUT_RGBI));
    batched_size = n;
  }
  if (nj.nvjpegDecodeBatchedEx(handle, batched, data.data(), lengths.data(), images.data(),
                               ps.data(), stream) == NVJPEG_STATUS_SUCCESS) {
    counts.hardware += uint64_t(n);
    return;
  }
  // The engine failed the batch: each of its samples again, through the hybrid backend.
  batched_size = 0;
  for (size_t k : ks) {
    const EncodedSample& e = samples[part.index[k]];
    part.route[k] = nj.nvjpegJpegStreamParse(hybrid_handle, arena + e.offset, e.length, 0, 0,
                                             streams[k]) == NVJPEG_STATUS_SUCCESS
                        ? Route::hybrid
                        : Route::cpu;
  }
}

void GpuDecoder::Impl::run_part(Part& part, std::span<const EncodedSample> samples,
                                const uint8_t* arena, const uint8_t* cpu_pixels,
                                const ResizeOutput& out, void* dst, cudaStream_t stream,
                                std::vector<size_t>& failed) {
  ++counts.parts;
  const EncodedSample& first = samples[part.index.front()];
  const size_t sample_pixels = size_t(3) * size_t(first.out_w) * size_t(first.out_h);
  ResizePlan plan;
  plan_batch_resize(part.planned, part.place, plan);
  for (size_t k = 0; k < plan.jobs.size(); ++k)
    plan.jobs[k].dst = int64_t(part.index[k]) * int64_t(sample_pixels);
  size_t cpu_count = 0;
  for (Route r : part.route) cpu_count += r == Route::cpu;
  const size_t jobs_bytes = plan.jobs.size() * sizeof(ResizeJob);
  const size_t taps_bytes = plan.taps.size() * sizeof(int32_t);
  const size_t lut_bytes = 3 * 256 * sizeof(float);
  const size_t pixels_at =
      decode_aligned(jobs_bytes) + decode_aligned(taps_bytes) + decode_aligned(lut_bytes);
  const size_t staging_bytes = pixels_at + cpu_count * sample_pixels;
  STOKER_GPU(cudaEventSynchronize(staged));  // the last part's uploads have left staging
  if (staging.bytes() < staging_bytes) staging = PinnedBuffer(staging_bytes + staging_bytes / 2);
  auto* host = static_cast<uint8_t*>(staging.get());
  std::memcpy(host, plan.jobs.data(), jobs_bytes);
  std::memcpy(host + decode_aligned(jobs_bytes), plan.taps.data(), taps_bytes);
  for (int c = 0; c < 3; ++c)
    std::memcpy(host + decode_aligned(jobs_bytes) + decode_aligned(taps_bytes) +
                    size_t(c) * 256 * sizeof(float),
                out.lut[size_t(c)].data(), 256 * sizeof(float));
  ensure(jobs, jobs_bytes, stream);
  ensure(taps, taps_bytes, stream);
  STOKER_GPU(cudaMemcpyAsync(jobs.get(), host, jobs_bytes, cudaMemcpyHostToDevice, stream));
  STOKER_GPU(cudaMemcpyAsync(taps.get(), host + decode_aligned(jobs_bytes), taps_bytes,
                             cudaMemcpyHostToDevice, stream));
  STOKER_GPU(cudaMemcpyAsync(lut.get(),
                             host + decode_aligned(jobs_bytes) + decode_aligned(taps_bytes),
                             lut_bytes, cudaMemcpyHostToDevice, stream));
  auto* windows = static_cast<uint8_t*>(work.get());
  std::vector<bool> bad(part.index.size(), false);
  size_t cpu_slot = 0;
  for (size_t k = 0; k < part.index.size(); ++k) {
    const size_t i = part.index[k];
    const EncodedSample& e = samples[i];
    if (part.route[k] == Route::loader_pixels) {
      ++counts.loader_cpu[size_t(e.on)];
      STOKER_GPU(cudaMemcpyAsync(windows + part.place[k].offset, cpu_pixels + i * sample_pixels,
                                 sample_pixels, cudaMemcpyHostToDevice, stream));
    } else if (part.route[k] == Route::cpu) {
      uint8_t* p = host + pixels_at + cpu_slot++ * sample_pixels;
      bad[k] = !decode_on_cpu(e, arena + e.offset, p);
      if (!bad[k]) ++counts.engine_cpu;
      STOKER_GPU(cudaMemcpyAsync(windows + part.place[k].offset, p, sample_pixels,
                                 cudaMemcpyHostToDevice, stream));
    }
  }
  STOKER_GPU(cudaEventRecord(staged, stream));
  decode_hardware(part, arena, samples, stream);
  for (size_t k = 0; k < part.index.size(); ++k) {
    if (part.route[k] != Route::hybrid) continue;
    const EncodedSample& e = samples[part.index[k]];
    if (decode_hybrid(k, part.place[k], stream)) {
      ++counts.hybrid;
      continue;
    }
    // nvJPEG refused it late: libjpeg-turbo decodes the window into its place.
    try {
      decode_window_on_cpu(cpu, {arena + e.offset, e.length}, e, "sample", window);
      const DecodedPlace& p = part.place[k];
      STOKER_GPU(cudaMemcpy2DAsync(windows + p.offset + p.y * p.pitch + p.x * 3, size_t(p.pitch),
                                   window.data, window.step, size_t(window.cols) * 3,
                                   size_t(window.rows), cudaMemcpyHostToDevice, stream));
      ++counts.engine_cpu;
    } catch (const Error&) {
      bad[k] = true;
    }
  }
  for (size_t k = 0; k < part.index.size(); ++k)
    if ((part.route[k] == Route::hardware || part.route[k] == Route::hybrid) &&
        part.place[k].pitch != int64_t(part.planned[k].region.w) * 3)
      ++counts.whole_image;
  uint8_t* temp = windows + decode_aligned(part.window_bytes);
  launch_resize(plan, jobs.as<ResizeJob>(), taps.as<int32_t>(), windows, temp, lut.as<float>(),
                out.dtype, out.nhwc, dst, stream);
  const size_t elem = device_dtype_bytes(out.dtype);
  for (size_t k = 0; k < part.index.size(); ++k) {
    if (!bad[k]) continue;
    ++counts.failed;
    failed.push_back(part.index[k]);
    STOKER_GPU(cudaMemsetAsync(static_cast<uint8_t*>(dst) + part.index[k] * sample_pixels * elem, 0,
                               sample_pixels * elem, stream));
  }
}

std::vector<size_t> GpuDecoder::Impl::decode(std::span<const EncodedSample> samples,
                                             const uint8_t* arena, const uint8_t* cpu_pixels,
                                             const ResizeOutput& out, void* dst,
                                             cudaStream_t stream) {
  const int64_t t0 = now_ns();
  std::vector<size_t> failed;
  cut_into_parts(
      samples, work.bytes(),
      [&](const EncodedSample& e, size_t k, DecodedPlace& place) {
        reserve_slots(k);
        return choose(e, arena + e.offset, k, place);
      },
      [&](Part& part) { run_part(part, samples, arena, cpu_pixels, out, dst, stream, failed); });
  ++counts.batches;
  counts.host_s += double(now_ns() - t0) * 1e-9;
  return failed;
}

GpuDecoder::GpuDecoder(const GpuDecodeConfig& config) : impl_(std::make_unique<Impl>(config)) {}
GpuDecoder::~GpuDecoder() = default;

std::vector<size_t> GpuDecoder::decode(std::span<const EncodedSample> samples, const uint8_t* arena,
                                       const uint8_t* cpu_pixels, const ResizeOutput& out,
                                       void* dst, void* stream) {
  return impl_->decode(samples, arena, cpu_pixels, out, dst, static_cast<cudaStream_t>(stream));
}

const GpuDecodeCounts& GpuDecoder::counts() const {
  return impl_->counts;
}

std::string GpuDecoder::describe() const {
  const NvjpegApi& nj = impl_->nj;
  return fmt::format("nvJPEG {}.{}.{} {} ({})", nj.major, nj.minor, nj.patch,
                     impl_->hw ? "hardware engine, batched" : "hybrid backend (no hardware engine)",
                     nj.path);
}

}  // namespace stoker::gpu
