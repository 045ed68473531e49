// SPDX-License-Identifier: Apache-2.0
#include "augment/gpu/cuda/gpu_decoder.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstring>

#include "augment/decoder.h"
#include "augment/gpu/cuda/nvjpeg_api.h"
#include "augment/gpu/cuda/resize_kernels.h"
#include "augment/gpu/decode_parts.h"
#include "augment/gpu/window_decode.h"
#include "augment/resize_antialias.h"
#include "common/clock.h"
#include "common/cuda/buffer.h"
#include "common/cuda/check.h"
#include "common/cuda/handle.h"
#include "common/error.h"

namespace stoker::gpu {
namespace {

// The decoder's device made current for a scope, and the thread's previous one restored: the
// trainer's thread keeps the backend's device whatever this one is.
class OnDevice {
 public:
  explicit OnDevice(int device) : device_(device) {
    STOKER_GPU(cudaGetDevice(&previous_));
    if (previous_ != device_) STOKER_GPU(cudaSetDevice(device_));
  }
  ~OnDevice() {
    if (previous_ != device_) cudaSetDevice(previous_);
  }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;

 private:
  int device_ = 0, previous_ = 0;
};

// nvJPEG's flags, most wanted first: strict bitstreams (a corrupt file is refused, as the
// CPU path refuses libjpeg's warnings, instead of decoding into garbage) and chroma upsampling
// by interpolation (libjpeg-turbo's "fancy" upsampling, the CPU path's). A library that
// refuses a flag gets the handle without it.
constexpr unsigned kStrict = NVJPEG_FLAGS_BITSTREAM_STRICT;
constexpr unsigned kInterpolate = NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION;
constexpr unsigned kFlagChoices[] = {kStrict | kInterpolate, kStrict, kInterpolate, 0};

std::string flag_names(unsigned flags) {
  if (flags == 0) return "no flags";
  std::string s = (flags & kStrict) ? "strict bitstreams" : "";
  if (flags & kInterpolate) s += fmt::format("{}interpolated chroma", s.empty() ? "" : ", ");
  return s;
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
  PinnedBuffer staging;   // jobs, taps, lut and CPU-decoded pixels on their way up
  PinnedBuffer late;      // a window libjpeg-turbo decoded after nvJPEG refused it, on its way up
  unsigned flags = 0;     // nvJPEG's, as its handle accepted them
  EventHandle staged;     // recorded after the uploads from `staging`
  EventHandle late_sent;  // recorded after the upload from `late`
  EventHandle decoded;    // recorded after the last nvjpegDecodeBatchedEx
  bool batch_in_flight = false;  // `decoded` is recorded and not yet waited for
  EventHandle drained;           // recorded at the end of a stream the host drains
  EventHandle finished;          // recorded after the last batch's work
  Decoder cpu{[] {
    DecodeOptions o;
    o.allow_dct_scaling = false;
    return o;
  }()};
  cv::Mat window, resized;
  GpuDecodeCounts counts;

  explicit Impl(const GpuDecodeConfig& c) : config(c), nj(nvjpeg()) {
    const OnDevice on(c.device);
    create_handles();
    work = DeviceBuffer(c.decode_memory);
    lut = DeviceBuffer(3 * 256 * sizeof(float));
    for (EventHandle* e : {&staged, &late_sent, &decoded, &drained, &finished})
      STOKER_GPU(cudaEventCreateWithFlags(e->out(), cudaEventDisableTiming));
  }

  // nvJPEG's handles and states, on the current device (they are bound to it).
  void create_handles() {
    for (unsigned f : kFlagChoices) {
      if (!config.hardware) break;
      if (nj.nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, f, &handle) ==
          NVJPEG_STATUS_SUCCESS) {
        hw = true;
        flags = f;
        break;
      }
    }
    for (unsigned f : kFlagChoices) {
      if (hw) break;
      const nvjpegStatus_t st =
          nj.nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, f, &handle);
      if (st == NVJPEG_STATUS_SUCCESS) {
        flags = f;
        break;
      }
      if (f == 0) STOKER_NVJPEG(st);
    }
    if (hw) STOKER_NVJPEG(nj.nvjpegJpegStateCreate(handle, &batched));
    // The hybrid decoder from the same handle where nvJPEG allows it, else from a default one.
    hybrid_handle = handle;
    if (nj.nvjpegDecoderCreate(handle, NVJPEG_BACKEND_HYBRID, &hybrid) != NVJPEG_STATUS_SUCCESS) {
      STOKER_NVJPEG(
          nj.nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, flags, &hybrid_handle));
      STOKER_NVJPEG(nj.nvjpegDecoderCreate(hybrid_handle, NVJPEG_BACKEND_HYBRID, &hybrid));
    }
    STOKER_NVJPEG(nj.nvjpegDecoderStateCreate(hybrid_handle, hybrid, &hybrid_state));
    STOKER_NVJPEG(nj.nvjpegBufferPinnedCreate(hybrid_handle, nullptr, &hybrid_pinned));
    STOKER_NVJPEG(nj.nvjpegBufferDeviceCreate(hybrid_handle, nullptr, &hybrid_device));
    STOKER_NVJPEG(nj.nvjpegStateAttachPinnedBuffer(hybrid_state, hybrid_pinned));
    STOKER_NVJPEG(nj.nvjpegStateAttachDeviceBuffer(hybrid_state, hybrid_device));
  }

  ~Impl() {
    const OnDevice on(config.device);
    // Everything enqueued (the last batch's decode and resize, not only its uploads) ends
    // before its state, handles and memory go. The polling wait first, so that a collective
    // held by a dead peer is aborted and the plain wait after it returns.
    if (finished) {
      try {
        wait(finished);
      } catch (const Error&) {
        // Destructors do not throw; the communicator is aborted and its kernels have ended.
      }
      cudaEventSynchronize(finished);
    }
    for (auto s : streams) nj.nvjpegJpegStreamDestroy(s);
    for (auto p : params) nj.nvjpegDecodeParamsDestroy(p);
    if (hybrid_state) nj.nvjpegJpegStateDestroy(hybrid_state);
    if (hybrid_pinned) nj.nvjpegBufferPinnedDestroy(hybrid_pinned);
    if (hybrid_device) nj.nvjpegBufferDeviceDestroy(hybrid_device);
    if (hybrid) nj.nvjpegDecoderDestroy(hybrid);
    if (batched) nj.nvjpegJpegStateDestroy(batched);
    if (hybrid_handle && hybrid_handle != handle) nj.nvjpegDestroy(hybrid_handle);
    if (handle) nj.nvjpegDestroy(handle);
    // Freed while their device is current.
    for (DeviceBuffer* b : {&work, &jobs, &taps, &lut}) *b = DeviceBuffer();
    for (EventHandle* e : {&staged, &late_sent, &decoded, &drained, &finished}) e->reset();
  }

  // Host waits on device work go through the backend's wait (it polls a collective).
  void wait(cudaEvent_t e) const {
    if (config.wait) {
      config.wait(e);
      return;
    }
    STOKER_GPU(cudaEventSynchronize(e));
  }
  void drain(cudaStream_t stream) {
    STOKER_GPU(cudaEventRecord(drained, stream));
    wait(drained);
  }
  // A device buffer that grows (never shrinks) after the stream has finished with it.
  void ensure(DeviceBuffer& b, size_t bytes, cudaStream_t stream) {
    if (b.bytes() >= bytes) return;
    drain(stream);
    b = DeviceBuffer(bytes + bytes / 2);
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
  bool decode_in_place(const EncodedSample& e, const uint8_t* bytes, const DecodedPlace& p,
                       cudaStream_t stream);
  void stage_part(const ResizePlan& plan, const Part& part, std::span<const EncodedSample> samples,
                  const uint8_t* arena, const uint8_t* cpu_pixels, const ResizeOutput& out,
                  size_t sample_pixels, cudaStream_t stream, std::vector<bool>& bad);
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

bool GpuDecoder::Impl::decode_in_place(const EncodedSample& e, const uint8_t* bytes,
                                       const DecodedPlace& p, cudaStream_t stream) {
  try {
    decode_window_on_cpu(cpu, {bytes, e.length}, e, "sample", window);
  } catch (const Error&) {
    return false;
  }
  // Up from pinned memory (an asynchronous copy from pageable memory may return before it has
  // read it), once the previous late window has left.
  const size_t row = size_t(window.cols) * 3, bytes_up = row * size_t(window.rows);
  wait(late_sent);
  if (late.bytes() < bytes_up) late = PinnedBuffer(bytes_up + bytes_up / 2);
  auto* host = static_cast<uint8_t*>(late.get());
  for (int y = 0; y < window.rows; ++y)
    std::memcpy(host + size_t(y) * row, window.ptr<uint8_t>(y), row);
  auto* windows = static_cast<uint8_t*>(work.get());
  STOKER_GPU(cudaMemcpy2DAsync(windows + p.offset + p.y * p.pitch + p.x * 3, size_t(p.pitch), host,
                               row, row, size_t(window.rows), cudaMemcpyHostToDevice, stream));
  STOKER_GPU(cudaEventRecord(late_sent, stream));
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
  drain(stream);
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
  // The previous part's batched decode must have finished before the state is initialised
  // again or reused (nvjpegDecodeBatchedInitialize: "Any currently running batched decoding
  // should be finished before calling this function").
  if (batch_in_flight) {
    wait(decoded);
    batch_in_flight = false;
  }
  const int n = int(data.size());
  if (n != batched_size) {
    STOKER_NVJPEG(nj.nvjpegDecodeBatchedInitialize(handle, batched, n, 1, NVJPEG_OUTPUT_RGBI));
    batched_size = n;
  }
  const nvjpegStatus_t st = nj.nvjpegDecodeBatchedEx(handle, batched, data.data(), lengths.data(),
                                                     images.data(), ps.data(), stream);
  STOKER_GPU(cudaEventRecord(decoded, stream));  // whatever the call left enqueued
  batch_in_flight = true;
  if (st == NVJPEG_STATUS_SUCCESS) {
    counts.hardware += uint64_t(n);
    return;
  }
  // The engine failed the batch: each of its samples again, through the hybrid backend where
  // it parses, else libjpeg-turbo into its place.
  batched_size = 0;
  for (size_t k : ks) {
    const EncodedSample& e = samples[part.index[k]];
    part.route[k] = route_after_engine_failure(
        nj.nvjpegJpegStreamParse(hybrid_handle, arena + e.offset, e.length, 0, 0, streams[k]) ==
        NVJPEG_STATUS_SUCCESS);
  }
}

// The part's resize plan, the LUT and the CPU's samples into pinned staging and up.
void GpuDecoder::Impl::stage_part(const ResizePlan& plan, const Part& part,
                                  std::span<const EncodedSample> samples, const uint8_t* arena,
                                  const uint8_t* cpu_pixels, const ResizeOutput& out,
                                  size_t sample_pixels, cudaStream_t stream,
                                  std::vector<bool>& bad) {
  size_t cpu_count = 0;
  for (Route r : part.route) cpu_count += r == Route::cpu;
  const size_t jobs_bytes = plan.jobs.size() * sizeof(ResizeJob);
  const size_t taps_bytes = plan.taps.size() * sizeof(int32_t);
  const size_t lut_bytes = 3 * 256 * sizeof(float);
  const size_t taps_at = decode_aligned(jobs_bytes);
  const size_t lut_at = taps_at + decode_aligned(taps_bytes);
  const size_t pixels_at = lut_at + decode_aligned(lut_bytes);
  const size_t staging_bytes = pixels_at + cpu_count * sample_pixels;
  wait(staged);  // the last part's uploads have left staging
  if (staging.bytes() < staging_bytes) staging = PinnedBuffer(staging_bytes + staging_bytes / 2);
  auto* host = static_cast<uint8_t*>(staging.get());
  std::memcpy(host, plan.jobs.data(), jobs_bytes);
  std::memcpy(host + taps_at, plan.taps.data(), taps_bytes);
  for (int c = 0; c < 3; ++c)
    std::memcpy(host + lut_at + size_t(c) * 256 * sizeof(float), out.lut[size_t(c)].data(),
                256 * sizeof(float));
  ensure(jobs, jobs_bytes, stream);
  ensure(taps, taps_bytes, stream);
  STOKER_GPU(cudaMemcpyAsync(jobs.get(), host, jobs_bytes, cudaMemcpyHostToDevice, stream));
  STOKER_GPU(
      cudaMemcpyAsync(taps.get(), host + taps_at, taps_bytes, cudaMemcpyHostToDevice, stream));
  STOKER_GPU(cudaMemcpyAsync(lut.get(), host + lut_at, lut_bytes, cudaMemcpyHostToDevice, stream));
  auto* windows = static_cast<uint8_t*>(work.get());
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
  std::vector<bool> bad(part.index.size(), false);
  stage_part(plan, part, samples, arena, cpu_pixels, out, sample_pixels, stream, bad);
  decode_hardware(part, arena, samples, stream);
  finish_part(
      part,
      [&](size_t k) {
        const bool ok = decode_hybrid(k, part.place[k], stream);
        counts.hybrid += ok;
        return ok;
      },
      [&](size_t k) {
        const EncodedSample& e = samples[part.index[k]];
        const bool ok = decode_in_place(e, arena + e.offset, part.place[k], stream);
        counts.engine_cpu += ok;
        return ok;
      },
      bad);
  for (size_t k = 0; k < part.index.size(); ++k)
    counts.whole_image += decoded_whole_image(part.route[k], part.place[k]);
  auto* windows = static_cast<uint8_t*>(work.get());
  uint8_t* temp = windows + decode_aligned(part.window_bytes);
  launch_resize(plan, jobs.as<ResizeJob>(), taps.as<int32_t>(), windows, temp, lut.as<float>(),
                out.dtype, out.layout, dst, stream);
  const size_t elem = dtype_bytes(out.dtype);
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
  const OnDevice on(config.device);
  std::vector<size_t> failed;
  try {
    cut_into_parts(
        samples, work.bytes(),
        [&](const EncodedSample& e, size_t k, DecodedPlace& place) {
          reserve_slots(k);
          return choose(e, arena + e.offset, k, place);
        },
        [&](Part& part) { run_part(part, samples, arena, cpu_pixels, out, dst, stream, failed); });
  } catch (...) {
    cudaEventRecord(finished, stream);  // what was enqueued ends before the destructor frees
    throw;
  }
  STOKER_GPU(cudaEventRecord(finished, stream));
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
  return fmt::format("nvJPEG {}.{}.{} {}, {} ({})", nj.major, nj.minor, nj.patch,
                     impl_->hw ? "hardware engine, batched" : "hybrid backend (no hardware engine)",
                     flag_names(impl_->flags), nj.path);
}

}  // namespace stoker::gpu
