// SPDX-License-Identifier: Apache-2.0
#include "augment/gpu/cuda/resize_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "augment/gpu/resize_math.h"
#include "common/cuda/float_io.cuh"
#include "common/error.h"

namespace stoker::gpu {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocksX = 4096;  // grid-stride beyond

// blockIdx.y: the job; threads stride over its (y1 - y0) x out_w intermediate pixels.
__global__ void horizontal_pass(const ResizeJob* jobs, const int32_t* taps, const uint8_t* decoded,
                                uint8_t* temp) {
  const ResizeJob j = jobs[blockIdx.y];
  const TapsLayout t = taps_layout(j);
  const int64_t n = int64_t(j.y1 - j.y0) * j.out_w;
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < n;
       p += int64_t(gridDim.x) * blockDim.x) {
    const int r = int(p / j.out_w), xx = int(p % j.out_w);
    const uint8_t* src =
        decoded + j.src + (j.y0 + r) * j.src_pitch + 3 * int64_t(taps[t.x_first + xx]);
    const int32_t* w = taps + t.x_weight + int64_t(xx) * j.kx;
    const int count = taps[t.x_count + xx];
    uint8_t* o = temp + j.temp + p * 3;
    for (int c = 0; c < 3; ++c) o[c] = antialias_tap(src + c, 3, w, count);
  }
}

template <class T>
__global__ void vertical_pass(const ResizeJob* jobs, const int32_t* taps, const uint8_t* temp,
                              const float* lut, bool nhwc, T* dst) {
  const ResizeJob j = jobs[blockIdx.y];
  const TapsLayout t = taps_layout(j);
  const int64_t n = int64_t(j.out_h) * j.out_w;
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < n;
       p += int64_t(gridDim.x) * blockDim.x) {
    const int yy = int(p / j.out_w), xx = int(p % j.out_w);
    const uint8_t* src = temp + j.temp + (int64_t(taps[t.y_first + yy] - j.y0) * j.out_w + xx) * 3;
    const int32_t* w = taps + t.y_weight + int64_t(yy) * j.ky;
    const int count = taps[t.y_count + yy];
    const int ox = j.flip ? j.out_w - 1 - xx : xx;
    for (int c = 0; c < 3; ++c) {
      const uint8_t v = antialias_tap(src + c, int64_t(j.out_w) * 3, w, count);
      store_f(dst, j.dst + sample_offset(nhwc, c, yy, ox, j.out_h, j.out_w), lut[c * 256 + v]);
    }
  }
}

unsigned blocks(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 1 ? 1 : (b > kMaxBlocksX ? kMaxBlocksX : b));
}

}  // namespace

void launch_resize(const ResizePlan& plan, const ResizeJob* jobs, const int32_t* taps,
                   const uint8_t* decoded, uint8_t* temp, const float* lut, DType dtype,
                   Layout layout, void* dst, cudaStream_t stream) {
  const unsigned n = unsigned(plan.jobs.size());
  if (n == 0) return;
  STOKER_CHECK(n <= 65535);
  STOKER_CHECK(dtype != DType::u8);  // the trainer's input on a device is never raw pixels
  horizontal_pass<<<dim3(blocks(plan.max_temp_pixels), n), kThreads, 0, stream>>>(jobs, taps,
                                                                                  decoded, temp);
  const dim3 grid(blocks(plan.max_out_pixels), n);
  const bool nhwc = layout == Layout::nhwc;
  switch (dtype) {
    case DType::u8:  // refused above
      break;
    case DType::f32:
      vertical_pass<<<grid, kThreads, 0, stream>>>(jobs, taps, temp, lut, nhwc,
                                                   static_cast<float*>(dst));
      break;
    case DType::f16:
      vertical_pass<<<grid, kThreads, 0, stream>>>(jobs, taps, temp, lut, nhwc,
                                                   static_cast<__half*>(dst));
      break;
    case DType::bf16:
      vertical_pass<<<grid, kThreads, 0, stream>>>(jobs, taps, temp, lut, nhwc,
                                                   static_cast<__nv_bfloat16*>(dst));
      break;
  }
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    fail("GPU decode: resize kernels did not launch: {}", cudaGetErrorString(e));
}

}  // namespace stoker::gpu
