// SPDX-License-Identifier: Apache-2.0
#include "tools/options/idle_rules.h"

#include "tools/options/command_options.h"
#include "tools/options/loader_options.h"

namespace stoker {

IdleRule row_rule(const char* flag, const IdleWith& w) {
  return {w.trigger, w.flag, {flag}, w.why, w.example, w.from_checkpoint, w.when};
}

const std::vector<IdleRule>& idle_rules() {
  static const std::vector<IdleRule> rules = [] {
    std::vector<IdleRule> rules;
    // `train --synthetic` has no loader: every loader row but those its random tensors have
    // (batch, size, normalisation, dtype, layout, seed) means nothing, and so do the command
    // rows of a loader (--epochs, --decode and its sizes).
    IdleRule synthetic{"--synthetic", true, {}, "random tensors, no loader", "", false, nullptr};
    for (const auto& r : loader_option_table())
      if (r.add && !r.synthetic_too) synthetic.idle.push_back(r.flag);
    for (const CommandOptionRow& r : command_option_table())
      if (r.synthetic_idle) synthetic.idle.push_back(r.flag);
    rules.push_back(std::move(synthetic));
    // Each row's own "means nothing unless X" (--flip: not the centre crop; --direct: a uring
    // reader; --decode-memory: GPU decode), in the order of the rows.
    for (const auto& r : loader_option_table())
      for (const IdleWith& w : r.idle) rules.push_back(row_rule(r.flag, w));
    for (const CommandOptionRow& r : command_option_table())
      for (const IdleWith& w : r.idle) rules.push_back(row_rule(r.flag, w));
    return rules;
  }();
  return rules;
}

std::optional<IdleFinding> find_idle_option(const OptionLookup& args) {
  return find_idle_option(args, idle_rules());
}

std::optional<IdleFinding> find_idle_option(const OptionLookup& args,
                                            const std::vector<IdleRule>& rules) {
  const bool resumed = args.given("--resume");
  for (const IdleRule& r : rules) {
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
