// SPDX-License-Identifier: Apache-2.0
// SVG building blocks of the report: see svg.h.
#include "tools/report/svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace stoker::report {

std::string esc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

const char* palette(size_t i) {
  // Okabe & Ito (2008), "Color Universal Design"; yellow last, it is faint on white.
  static const char* const colours[] = {"#E69F00", "#0072B2", "#009E73", "#D55E00",
                                        "#CC79A7", "#56B4E9", "#000000", "#F0E442"};
  return colours[i % (sizeof colours / sizeof *colours)];
}

const char* stage_colour(std::string_view stage) {
  if (stage == "read") return "#56B4E9";
  if (stage == "decode") return "#E69F00";
  if (stage == "augment") return "#009E73";
  if (stage == "collate") return "#CC79A7";
  if (stage == "wait") return "#D55E00";
  if (stage == "stage") return "#F0E442";  // the step part, not a loader stage
  if (stage == "compute") return "#0072B2";
  if (stage == "gap") return "#BBBBBB";
  return "#777777";
}

std::string short_num(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  std::string s = a >= 100  ? fmt::format("{:.0f}", v)
                  : a >= 10 ? fmt::format("{:.1f}", v)
                  : a >= 1  ? fmt::format("{:.2f}", v)
                            : fmt::format("{:.3g}", v);
  if (s.find('.') != std::string::npos && s.find('e') == std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

std::vector<double> nice_ticks(double lo, double hi, int count) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, count);
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> t;
  // From the last tick at or below lo to the first at or above hi, so the data fit inside.
  const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
  for (double k = first; k <= last + 0.5; k += 1) t.push_back(k == 0 ? 0 : k * step);
  return t;
}

void x_axis(std::string& svg, const Scale& x, const std::vector<double>& ticks, double y_pixel,
            double grid_top, const std::string& title) {
  svg += fmt::format(R"(<g class="axis x"><line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)",
                     x.p0, y_pixel, x.p1, y_pixel);
  for (const double t : ticks) {
    const double px = x(t);
    svg += fmt::format(R"(<line class="grid" x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}"/>)"
                       R"(<line x1="{0:.1f}" y1="{2:.1f}" x2="{0:.1f}" y2="{3:.1f}"/>)"
                       R"(<text x="{0:.1f}" y="{4:.1f}" text-anchor="middle">{5}</text>)",
                       px, grid_top, y_pixel, y_pixel + 4, y_pixel + 16, short_num(t));
  }
  svg +=
      fmt::format(R"(<text class="title" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text></g>)",
                  (x.p0 + x.p1) / 2, y_pixel + 32, esc(title));
}

void y_axis(std::string& svg, const Scale& y, const std::vector<double>& ticks, double x_pixel,
            double grid_right, const std::string& title) {
  svg += fmt::format(R"(<g class="axis y"><line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)",
                     x_pixel, y.p0, x_pixel, y.p1);
  for (const double t : ticks) {
    const double py = y(t);
    svg += fmt::format(R"(<line class="grid" x1="{0:.1f}" y1="{1:.1f}" x2="{2:.1f}" y2="{1:.1f}"/>)"
                       R"(<line x1="{3:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{1:.1f}"/>)"
                       R"(<text x="{4:.1f}" y="{5:.1f}" text-anchor="end">{6}</text>)",
                       x_pixel, py, grid_right, x_pixel - 4, x_pixel - 6, py + 4, short_num(t));
  }
  const double cy = (y.p0 + y.p1) / 2;
  svg += fmt::format(
      R"svg(<text class="title" x="{0:.1f}" y="{1:.1f}" text-anchor="middle" transform="rotate(-90 {0:.1f} {1:.1f})">{2}</text></g>)svg",
      x_pixel - 40, cy, esc(title));
}

std::string marker(std::string_view shape, double cx, double cy, double r,
                   std::string_view colour) {
  if (shape == "square" || shape == "rect")
    return fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"/>)",
                       cx - r, cy - r, 2 * r, 2 * r, colour);
  if (shape == "diamond")
    return fmt::format(
        R"(<path d="M{:.1f} {:.1f}l{:.1f} {:.1f}l{:.1f} {:.1f}l{:.1f} {:.1f}z" fill="{}"/>)", cx,
        cy - r * 1.3, r * 1.3, r * 1.3, -r * 1.3, r * 1.3, -r * 1.3, -r * 1.3, colour);
  if (shape == "triangle")
    return fmt::format(R"(<path d="M{:.1f} {:.1f}L{:.1f} {:.1f}L{:.1f} {:.1f}z" fill="{}"/>)", cx,
                       cy - r * 1.2, cx + r * 1.1, cy + r * 0.9, cx - r * 1.1, cy + r * 0.9,
                       colour);
  if (shape == "cross")
    return fmt::format(
        R"(<path d="M{:.1f} {:.1f}L{:.1f} {:.1f}M{:.1f} {:.1f}L{:.1f} {:.1f}" stroke="{}" stroke-width="2.5"/>)",
        cx - r, cy - r, cx + r, cy + r, cx - r, cy + r, cx + r, cy - r, colour);
  return fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="{:.1f}" fill="{}"/>)", cx, cy, r,
                     colour);
}

}  // namespace stoker::report
