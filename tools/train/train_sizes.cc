// SPDX-License-Identifier: Apache-2.0
#include "tools/train/train_sizes.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.h"
#include "common/measures.h"
#include "common/stats.h"
#include "models/flops.h"
#include "models/shapes.h"
#include "tools/options/option_checks.h"

namespace stoker {

void add_val_size_options(CLI::App& app, int& val_size, int& val_resize) {
  app.add_option("--val-size", val_size,
                 "Validation crop side in pixels, as torchvision's crop_size (default: the "
                 "training --size, or the --size-schedule's last size)")
      ->check(integer_in(8, 8192));
  app.add_option("--val-resize", val_resize,
                 "Validation: the short side before the centre crop, as torchvision's "
                 "resize_size (default: 256/224 of the crop, a 0.875 crop ratio)")
      ->check(integer_in(8, 8192));
}

void check_val_size(const std::string& val, const CLI::App& app) {
  for (const char* opt : {"--val-size", "--val-resize"})
    if (app.count(opt) > 0 && val.empty()) usage_fail("train: {} needs --val DIR", opt);
}

std::vector<SizeCost> cost_per_size(const std::vector<StepRecord>& records, size_t warmup,
                                    int64_t height, int64_t width, int64_t images_per_step,
                                    const Network& net, std::span<const double> seconds) {
  STOKER_CHECK(seconds.empty() || seconds.size() == records.size());
  std::vector<SizeCost> out;
  for (size_t k = 0; k < records.size(); ++k) {
    const StepRecord& r = records[k];
    const int64_t h = r.height > 0 ? r.height : height, w = r.width > 0 ? r.width : width;
    SizeCost& c = size_cost(out, h, w);
    if (c.steps == 0) {
      c.reshape_s = 0;
      c.flop_per_image = trained_image_flops(forward_cost(net, infer_shapes(net, h, w)));
    }
    ++c.steps;
    c.reshape_s += r.reshape;
    if (k >= warmup)
      c.add_timed(seconds.empty() ? r.total - r.reshape : seconds[k], r.wait, r.stage,
                  step_compute(r.busy, r.forward, r.backward, r.update), images_per_step);
  }
  return out;
}

double mean_flop_per_image(const std::vector<SizeCost>& sizes) {
  double flop = 0, steps = 0;
  for (const SizeCost& c : sizes) {
    flop += c.flop_per_image * double(c.timed_steps);
    steps += double(c.timed_steps);
  }
  return steps > 0 ? flop / steps : (sizes.empty() ? 0 : sizes.front().flop_per_image);
}

void print_per_size(const std::vector<SizeCost>& sizes) {
  fmt::print("# per size (steady state; re-plans apart):\n");
  fmt::print("{:>9} {:>8} {:>8} {:>9} {:>8} {:>10} {:>9}\n", "size", "steps", "timed", "step ms",
             "img/s", "GFLOP/img", "replan s");
  for (const SizeCost& c : sizes)
    fmt::print("{:>9} {:>8} {:>8} {:>9.1f} {:>8.2f} {:>10.2f} {:>9.2f}\n",
               fmt::format("{}x{}", c.height, c.width), c.steps, c.timed_steps,
               1e3 * c.median_step_s(), c.images_per_s(), c.flop_per_image / 1e9, c.reshape_s);
}

}  // namespace stoker
