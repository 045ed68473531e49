// SPDX-License-Identifier: Apache-2.0
// stoker gen OUT: write a synthetic ImageNet-like dataset (see gen_dataset.h).
#include <fmt/format.h>

#include <memory>

#include "common/error.h"
#include "tools/commands.h"
#include "tools/gen/gen_dataset.h"
#include "tools/options/option_checks.h"
#include "tools/output_check.h"

namespace stoker {

void add_gen_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("gen", "Write a deterministic synthetic ImageNet-like dataset");
  auto c = std::make_shared<GenConfig>();
  auto aspect = std::make_shared<std::vector<double>>(std::vector<double>{3.0 / 4.0, 4.0 / 3.0});
  auto pattern = std::make_shared<std::string>("photo");
  cmd->add_option("out", c->out, "Output directory")->required();
  cmd->add_option("--sizes", c->sizes,
                  "About this many pixels a side (w*h = size^2); several make out/<size>px/")
      ->delimiter(',')
      ->capture_default_str()
      ->check(integer_in(8, 16384));
  cmd->add_option("--classes", c->classes, "Number of classes")
      ->capture_default_str()
      ->check(integer_in(1, 1 << 20));
  cmd->add_option("--per-class", c->per_class, "Images per class")
      ->capture_default_str()
      ->check(integer_in(1, 1 << 24));
  cmd->add_option("--aspect", *aspect, "Width/height spread, lo,hi (log-uniform)")
      ->delimiter(',')
      ->expected(2)
      ->check(number_in(0, 1e6, true));
  cmd->add_option("--quality", c->quality, "JPEG quality")
      ->capture_default_str()
      ->check(integer_in(1, 100));
  cmd->add_option("--seed", c->seed, "Seed: same seed and options, same bytes")
      ->capture_default_str()
      ->check(integer_in(0));
  cmd->add_option("--pattern", *pattern,
                  "photo (textured, class-dependent) or index (flat colour encoding the sample "
                  "index, for tests)")
      ->capture_default_str()
      ->check(parsed_by(
          [](const std::string& s) {
            if (s != "photo" && s != "index")
              fail("unknown pattern '{}': expected photo or index", s);
          },
          "PATTERN"));
  cmd->add_flag("--force", c->force,
                "Write into OUT even if it holds a dataset made with other options, or other "
                "files (files gen does not write stay)");
  cmd->callback([c, aspect, pattern] {
    if (*pattern == "photo") {
      c->pattern = GenPattern::photo;
    } else if (*pattern == "index") {
      c->pattern = GenPattern::index;
    } else {
      fail("unknown --pattern '{}': expected photo or index", *pattern);
    }
    c->aspect_lo = (*aspect)[0];
    c->aspect_hi = (*aspect)[1];
    if (!(c->aspect_lo > 0 && c->aspect_lo <= c->aspect_hi)) {
      usage_fail("--aspect {},{}: expected 0 < lo <= hi", c->aspect_lo, c->aspect_hi);
    }
    check_writable_dir("out", c->out);
    const GenResult r = generate_dataset(*c);
    for (const auto& root : r.roots) fmt::print("{}\n", root);
  });
}

}  // namespace stoker
