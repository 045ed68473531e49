// SPDX-License-Identifier: Apache-2.0
#include "augment/resize_antialias.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "augment/gpu/resize_math.h"
#include "common/error.h"

namespace stoker {

void antialias_taps(int in, int out, AntialiasTaps& t) {
  const double scale = double(in) / out;
  const double filterscale = std::max(scale, 1.0);
  const double support = filterscale;  // the triangle's support, 1, times the scale
  t.ksize = int(std::ceil(support)) * 2 + 1;
  t.first.assign(size_t(out), 0);
  t.count.assign(size_t(out), 0);
  t.weight.assign(size_t(out) * size_t(t.ksize), 0);
  std::vector<double> k(size_t(t.ksize));
  for (int xx = 0; xx < out; ++xx) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    const int xmin = std::max(int(center - support + 0.5), 0);
    const int xmax = std::min(int(center + support + 0.5), in) - xmin;
    double ww = 0;
    for (int x = 0; x < xmax; ++x) {
      const double d = std::abs((x + xmin - center + 0.5) * ss);
      k[size_t(x)] = d < 1.0 ? 1.0 - d : 0.0;
      ww += k[size_t(x)];
    }
    int32_t* w = &t.weight[size_t(xx) * size_t(t.ksize)];
    for (int x = 0; x < xmax; ++x) {
      const double v = ww != 0.0 ? k[size_t(x)] / ww : k[size_t(x)];
      w[x] = int32_t(v < 0 ? -0.5 + v * (1 << kAntialiasPrecision)
                           : 0.5 + v * (1 << kAntialiasPrecision));
    }
    t.first[size_t(xx)] = xmin;
    t.count[size_t(xx)] = xmax;
  }
}

namespace {

using Taps = AntialiasTaps;

// Rows [y0, y1) of src, resampled along x into dst's rows 0..y1-y0.
void horizontal(const cv::Mat& src, int y0, int y1, const Taps& t, cv::Mat& dst) {
  const int out = int(t.first.size());
  for (int y = y0; y < y1; ++y) {
    const uint8_t* in = src.ptr<uint8_t>(y);
    uint8_t* o = dst.ptr<uint8_t>(y - y0);
    for (int xx = 0; xx < out; ++xx) {
      const int32_t* w = &t.weight[size_t(xx) * size_t(t.ksize)];
      const uint8_t* p = in + 3 * t.first[size_t(xx)];
      const int n = t.count[size_t(xx)];
      o[3 * xx] = antialias_tap(p, 3, w, n);
      o[3 * xx + 1] = antialias_tap(p + 1, 3, w, n);
      o[3 * xx + 2] = antialias_tap(p + 2, 3, w, n);
    }
  }
}

// Resamples src along y into dst; the taps' first rows are shifted down by `offset`.
void vertical(const cv::Mat& src, const Taps& t, int offset, cv::Mat& dst) {
  const int out = int(t.first.size());
  const int row = dst.cols * 3;
  std::vector<int32_t> acc(
      static_cast<size_t>(row));  // one output row, accumulated source row by row
  for (int yy = 0; yy < out; ++yy) {
    const int32_t* w = &t.weight[size_t(yy) * size_t(t.ksize)];
    std::fill(acc.begin(), acc.end(), 1 << (kAntialiasPrecision - 1));
    for (int y = 0; y < t.count[size_t(yy)]; ++y) {
      const uint8_t* in = src.ptr<uint8_t>(t.first[size_t(yy)] - offset + y);
      for (int i = 0; i < row; ++i) acc[size_t(i)] += in[i] * w[y];
    }
    uint8_t* o = dst.ptr<uint8_t>(yy);
    for (int i = 0; i < row; ++i) o[i] = antialias_clip8(acc[size_t(i)]);
  }
}

}  // namespace

void resize_antialias(const cv::Mat& src, int out_w, int out_h, cv::Mat& dst) {
  STOKER_CHECK(src.type() == CV_8UC3 && out_w > 0 && out_h > 0);
  thread_local Taps horiz, vert;
  thread_local cv::Mat temp;
  const bool need_h = src.cols != out_w, need_v = src.rows != out_h;
  dst.create(out_h, out_w, CV_8UC3);
  if (!need_h && !need_v) {
    src.copyTo(dst);
    return;
  }
  if (!need_v) {
    antialias_taps(src.cols, out_w, horiz);
    horizontal(src, 0, src.rows, horiz, dst);
    return;
  }
  antialias_taps(src.rows, out_h, vert);
  if (!need_h) {
    vertical(src, vert, 0, dst);
    return;
  }
  // As Pillow: the horizontal pass covers only the rows the vertical one reads, rounded to
  // uint8 in between.
  const int y0 = vert.first.front();
  const int y1 = vert.first.back() + vert.count.back();
  antialias_taps(src.cols, out_w, horiz);
  temp.create(y1 - y0, out_w, CV_8UC3);
  horizontal(src, y0, y1, horiz, temp);
  vertical(temp, vert, y0, dst);
}

}  // namespace stoker
