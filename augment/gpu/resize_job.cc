// SPDX-License-Identifier: Apache-2.0
#include "augment/gpu/resize_job.h"

#include <algorithm>

#include "augment/gpu/resize_math.h"
#include "augment/resize_antialias.h"
#include "common/error.h"

namespace stoker {

void add_resize_job(ResizePlan& plan, int64_t src, int64_t src_pitch, int src_w, int src_h,
                    int out_w, int out_h, bool flip, int64_t dst) {
  STOKER_CHECK(src_w > 0 && src_h > 0 && out_w > 0 && out_h > 0);
  thread_local AntialiasTaps x, y;
  antialias_taps(src_w, out_w, x);
  antialias_taps(src_h, out_h, y);
  ResizeJob j;
  j.src = src;
  j.src_pitch = src_pitch;
  j.src_w = src_w;
  j.src_h = src_h;
  j.out_w = out_w;
  j.out_h = out_h;
  j.flip = flip ? 1 : 0;
  j.kx = x.ksize;
  j.ky = y.ksize;
  // As Pillow: the horizontal pass covers only the rows the vertical one reads.
  j.y0 = y.first.front();
  j.y1 = y.first.back() + y.count.back();
  j.taps = int64_t(plan.taps.size());
  j.temp = plan.temp_bytes;
  j.dst = dst;
  const TapsLayout t = taps_layout(j);
  plan.taps.resize(size_t(t.end));
  int32_t* p = plan.taps.data();
  std::copy(x.first.begin(), x.first.end(), p + t.x_first);
  std::copy(x.count.begin(), x.count.end(), p + t.x_count);
  std::copy(x.weight.begin(), x.weight.end(), p + t.x_weight);
  std::copy(y.first.begin(), y.first.end(), p + t.y_first);
  std::copy(y.count.begin(), y.count.end(), p + t.y_count);
  std::copy(y.weight.begin(), y.weight.end(), p + t.y_weight);
  const int64_t temp_pixels = int64_t(j.y1 - j.y0) * out_w;
  plan.temp_bytes += (temp_pixels * 3 + 15) / 16 * 16;
  plan.max_temp_pixels = std::max<int32_t>(plan.max_temp_pixels, int32_t(temp_pixels));
  plan.max_out_pixels = std::max(plan.max_out_pixels, out_w * out_h);
  plan.jobs.push_back(j);
}

void run_resize_jobs_on_host(const ResizePlan& plan, const uint8_t* decoded, uint8_t* temp,
                             const ResizeOutput& out, float* dst) {
  STOKER_CHECK(out.dtype == DType::f32);
  const bool nhwc = out.layout == Layout::nhwc;
  const int32_t* taps = plan.taps.data();
  for (const ResizeJob& j : plan.jobs) {
    const TapsLayout t = taps_layout(j);
    uint8_t* rows = temp + j.temp;
    for (int r = 0; r < j.y1 - j.y0; ++r)
      for (int xx = 0; xx < j.out_w; ++xx) {
        const uint8_t* p =
            decoded + j.src + (j.y0 + r) * j.src_pitch + 3 * int64_t(taps[t.x_first + xx]);
        const int32_t* w = taps + t.x_weight + int64_t(xx) * j.kx;
        for (int c = 0; c < 3; ++c)
          rows[(int64_t(r) * j.out_w + xx) * 3 + c] =
              antialias_tap(p + c, 3, w, taps[t.x_count + xx]);
      }
    for (int yy = 0; yy < j.out_h; ++yy)
      for (int xx = 0; xx < j.out_w; ++xx) {
        const uint8_t* p = rows + (int64_t(taps[t.y_first + yy] - j.y0) * j.out_w + xx) * 3;
        const int32_t* w = taps + t.y_weight + int64_t(yy) * j.ky;
        const int ox = j.flip ? j.out_w - 1 - xx : xx;
        for (int c = 0; c < 3; ++c) {
          const uint8_t v = antialias_tap(p + c, int64_t(j.out_w) * 3, w, taps[t.y_count + yy]);
          dst[j.dst + sample_offset(nhwc, c, yy, ox, j.out_h, j.out_w)] = out.lut[size_t(c)][v];
        }
      }
  }
}

}  // namespace stoker
