// SPDX-License-Identifier: Apache-2.0
// The small pieces every chart of the report uses: HTML/attribute escaping, a colour-blind
// safe palette (Okabe-Ito), "nice" axis ticks and axis drawing into an SVG string.
// Not a plotting library: each chart in charts.cc lays itself out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stoker::report {

// Text and attribute values are escaped the same way (& < > " ').
std::string esc(std::string_view s);

// Okabe-Ito colours, cycled; index 0 is orange, not black, so the first series stands out.
const char* palette(size_t i);
// The colour of a loader stage (read/decode/augment/collate) or a step part
// (wait/copy/compute/gap), the same in every chart and legend.
const char* stage_colour(std::string_view stage);

// Short numbers for labels: 3 significant digits, no trailing zeros.
std::string short_num(double v);

// About `count` round tick values (1, 2, 2.5, 5 x 10^k), the first <= lo, the last >= hi.
std::vector<double> nice_ticks(double lo, double hi, int count = 5);

// A linear map from data to pixels.
struct Scale {
  double d0, d1, p0, p1;
  double operator()(double v) const {
    return d1 == d0 ? (p0 + p1) / 2 : p0 + (v - d0) * (p1 - p0) / (d1 - d0);
  }
};

// Axis lines, ticks, tick labels, grid lines and the axis title, appended to `svg`.
// The x axis is drawn along the bottom of the plot area, the y axis along its left.
void x_axis(std::string& svg, const Scale& x, const std::vector<double>& ticks, double y_pixel,
            double grid_top, const std::string& title);
void y_axis(std::string& svg, const Scale& y, const std::vector<double>& ticks, double x_pixel,
            double grid_right, const std::string& title);

// A key of a legend: a marker of `colour` and its label.
struct LegendItem {
  std::string label, colour, marker;  // marker: "rect", "circle", "square", "diamond", "triangle"
};
// A marker shape centred on (cx, cy).
std::string marker(std::string_view shape, double cx, double cy, double r, std::string_view colour);

}  // namespace stoker::report
