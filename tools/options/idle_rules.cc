// SPDX-License-Identifier: Apache-2.0
#include "tools/options/idle_rules.h"

#include "augment/crop.h"
#include "tools/options/command_options.h"
#include "tools/options/loader_options.h"

namespace stoker {

const std::vector<IdleRule>& idle_rules() {
  // Schedule and optimizer names are compared as text (train/lr_schedule.h, train/sgd.h hold
  // their parsers, which this table may not link); a name neither knows applies no rule and
  // is refused by the parser itself. The loader's rules come from its rows.
  static const std::vector<IdleRule> rules = [] {
    std::vector<IdleRule> rules = {
        {"--transform",
         false,
         {"--flip", "--jitter", "--grayscale"},
         "evaluation's centre crop: no flip, no colour augmentation",
         "center",
         false,
         [](const std::string& v) {
           return !v.empty() && parse_transform(v) == TransformKind::center_crop;
         }},
        {"--no-decode",
         true,
         {"--transform", "--size", "--flip", "--jitter", "--grayscale", "--mean", "--std",
          "--dtype", "--layout", "--resize-filter", "--no-dct-scaling", "--no-partial-decode"},
         "files are read, not decoded",
         "",
         false,
         nullptr},
        {"--schedule",
         false,
         {"--milestones", "--gamma"},
         "they shape a step schedule",
         "cosine",
         true,
         [](const std::string& v) { return v.empty() || v == "cosine" || v == "constant"; }},
        {"--schedule",
         false,
         {"--min-lr"},
         "it ends a cosine schedule",
         "step",
         true,
         [](const std::string& v) { return v == "step" || v == "constant"; }},
        {"--optimizer",
         false,
         {"--lars-eta"},
         "it is LARS's",
         "sgd",
         true,
         [](const std::string& v) { return v == "sgd"; }},
    };
    // `train --synthetic` has no loader: every loader row but those its random tensors have
    // (batch, size, normalisation, dtype, layout, seed) means nothing, and so do the command
    // rows of a loader (--epochs, --decode and its sizes).
    IdleRule synthetic{"--synthetic", true, {}, "random tensors, no loader", "", false, nullptr};
    for (const auto& r : loader_option_table())
      if (r.add && !r.synthetic_too) synthetic.idle.push_back(r.flag);
    for (const CommandOptionRow& r : command_option_table())
      if (r.synthetic_idle) synthetic.idle.push_back(r.flag);
    rules.push_back(std::move(synthetic));
    // Each row's own "means nothing unless X" (--direct: a uring reader; --decode-memory: GPU
    // decode).
    for (const auto& r : loader_option_table())
      for (const IdleWith& w : r.idle)
        rules.push_back({w.trigger, false, {r.flag}, w.why, w.example, false, w.when});
    for (const CommandOptionRow& r : command_option_table())
      for (const IdleWith& w : r.idle)
        rules.push_back({w.trigger, false, {r.flag}, w.why, w.example, false, w.when});
    return rules;
  }();
  return rules;
}

std::optional<IdleFinding> find_idle_option(const OptionLookup& args) {
  const bool resumed = args.given("--resume");
  for (const IdleRule& r : idle_rules()) {
    if (!args.has(r.trigger)) continue;
    if (r.from_checkpoint && resumed && !args.given(r.trigger)) continue;
    const std::string value = r.flag ? "" : args.value(r.trigger);
    if (r.flag ? !args.given(r.trigger) : !r.applies(value)) continue;
    for (const char* o : r.idle)
      if (args.has(o) && args.given(o)) return IdleFinding{&r, o, value};
  }
  return std::nullopt;
}

}  // namespace stoker
