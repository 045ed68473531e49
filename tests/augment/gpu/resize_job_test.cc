// SPDX-License-Identifier: Apache-2.0
// The GPU decode's resize plan (augment/gpu/resize_job.h), run on the host with the same
// per-value functions the kernels run: for any decoded window it must give, bit for bit, what
// the CPU's antialiased resize (Pillow's bilinear, itself checked against Pillow through
// torchvision) followed by collate_sample gives. So on the device the only difference from
// the CPU path left is the two decoders' IDCTs.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "augment/collate.h"
#include "augment/gpu/resize_job.h"
#include "augment/resize_antialias.h"
#include "common/rng.h"

namespace stoker {
namespace {

struct Case {
  int src_w, src_h, out_w, out_h;
  bool flip, nhwc;
};

TEST(GpuResizePlan, EqualsResizeAntialiasThenCollateBitForBit) {
  // Reductions (up to 9x, wide supports), enlargements, one axis unchanged, both unchanged
  // (a CPU-decoded fallback sample), odd sizes; several jobs in one plan and buffer.
  const Case cases[] = {{640, 480, 224, 224, false, false},  {333, 517, 224, 160, true, false},
                        {100, 90, 224, 224, true, true},     {224, 300, 224, 224, false, true},
                        {300, 224, 224, 224, true, false},   {224, 224, 224, 224, true, true},
                        {2017, 1500, 224, 224, false, true}, {31, 7, 64, 48, true, false}};
  for (bool nhwc : {false, true}) {
    OutputSpec spec;
    spec.layout = nhwc ? Layout::nhwc : Layout::nchw;
    // One decoded buffer holding every window at a pitch wider than its row, as nvJPEG's
    // output may be, at offsets the plan records.
    std::vector<cv::Mat> windows;
    std::vector<int64_t> offsets;
    int64_t decoded_bytes = 0;
    Rng rng(7, 1, 2, 3);
    for (const Case& c : cases) {
      cv::Mat m(c.src_h, c.src_w, CV_8UC3);
      for (int y = 0; y < c.src_h; ++y)
        for (int x = 0; x < 3 * c.src_w; ++x)
          m.ptr<uint8_t>(y)[x] = uint8_t(((x * 7 + y * 13) % 251) ^ (rng.next() & 15));
      windows.push_back(m);
      offsets.push_back(decoded_bytes);
      decoded_bytes += int64_t(c.src_h) * (3 * c.src_w + 5);
    }
    std::vector<uint8_t> decoded(static_cast<size_t>(decoded_bytes));
    ResizePlan plan;
    int64_t dst = 0;
    std::vector<int64_t> dst_at;
    for (size_t i = 0; i < std::size(cases); ++i) {
      const Case& c = cases[i];
      const int64_t pitch = 3 * c.src_w + 5;
      for (int y = 0; y < c.src_h; ++y)
        std::memcpy(&decoded[size_t(offsets[i] + y * pitch)], windows[i].ptr<uint8_t>(y),
                    size_t(3 * c.src_w));
      add_resize_job(plan, offsets[i], pitch, c.src_w, c.src_h, c.out_w, c.out_h, c.flip, dst);
      dst_at.push_back(dst);
      dst += 3 * int64_t(c.out_w) * c.out_h;
    }
    ResizeOutput out;
    out.layout = nhwc ? Layout::nhwc : Layout::nchw;
    const Normalizer norm(spec);
    out.lut = norm.lut;
    std::vector<uint8_t> temp(size_t(plan.temp_bytes));
    std::vector<float> got(size_t(dst), -99.0f);
    run_resize_jobs_on_host(plan, decoded.data(), temp.data(), out, got.data());
    for (size_t i = 0; i < std::size(cases); ++i) {
      const Case& c = cases[i];
      cv::Mat resized;
      resize_antialias(windows[i], c.out_w, c.out_h, resized);
      OutputSpec s = spec;
      s.width = c.out_w;
      s.height = c.out_h;
      std::vector<float> want(size_t(3 * c.out_w * c.out_h));
      collate_sample(resized, c.flip, Normalizer(s), want.data());
      EXPECT_EQ(std::memcmp(want.data(), &got[size_t(dst_at[i])], want.size() * sizeof(float)), 0)
          << c.src_w << "x" << c.src_h << " -> " << c.out_w << "x" << c.out_h
          << (c.flip ? " flipped" : "") << (nhwc ? " nhwc" : " nchw");
    }
  }
}

}  // namespace
}  // namespace stoker
