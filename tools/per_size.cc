// SPDX-License-Identifier: Apache-2.0
#include "tools/per_size.h"

#include <algorithm>

#include "common/measures.h"
#include "common/stats.h"

namespace stoker {

void SizeCost::add_timed(double seconds, double wait, double stage, double compute,
                         int64_t step_images) {
  ++timed_steps;
  images += step_images;
  step_s.push_back(seconds);
  wait_s += wait;
  stage_s += stage;
  compute_s += compute;
}

double SizeCost::seconds() const {
  double sum = 0;
  for (double s : step_s) sum += s;
  return sum;
}

double SizeCost::images_per_s() const {
  return stoker::images_per_s(double(images), seconds());
}

double SizeCost::median_step_s() const {
  return step_s.empty() ? 0 : median(step_s);
}

SizeCost& size_cost(std::vector<SizeCost>& sizes, int64_t height, int64_t width) {
  auto it = std::find_if(sizes.begin(), sizes.end(),
                         [&](const SizeCost& c) { return c.height == height && c.width == width; });
  if (it != sizes.end()) return *it;
  SizeCost& c = sizes.emplace_back();
  c.height = height;
  c.width = width;
  return c;
}

nlohmann::json per_size_json(const std::vector<SizeCost>& sizes) {
  nlohmann::json out = nlohmann::json::array();
  for (const SizeCost& c : sizes) {
    const double seconds = c.seconds();
    const double ms = c.timed_steps > 0 ? 1e3 / double(c.timed_steps) : 0;
    nlohmann::json z = {{"height", c.height},
                        {"width", c.width},
                        {"steps", c.steps},
                        {"timed_steps", c.timed_steps},
                        {"images", c.images},
                        {"seconds", seconds},
                        {"images_per_s", c.images_per_s()},
                        {"step_ms",
                         {{"median", 1e3 * c.median_step_s()},
                          {"total", seconds * ms},
                          {"wait", c.wait_s * ms},
                          {"stage", c.stage_s * ms},
                          {"compute", c.compute_s * ms},
                          {"gap", gap_remainder(seconds, c.wait_s, c.stage_s, c.compute_s) * ms}}}};
    if (c.reshape_s >= 0) z["reshape_s"] = c.reshape_s;
    if (c.flop_per_image >= 0) z["flop_per_image"] = c.flop_per_image;
    out.push_back(std::move(z));
  }
  return out;
}

}  // namespace stoker
