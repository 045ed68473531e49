// SPDX-License-Identifier: Apache-2.0
#include "tools/options/idle_options.h"

#include <string>

#include "common/error.h"
#include "tools/options/idle_rules.h"
#include "tools/setup/train_options.h"

namespace stoker {
namespace {

// The command line's rules: the trainer rows' (which stoker.Loader has no use for), then
// idle_rules().
const std::vector<IdleRule>& command_line_rules() {
  static const std::vector<IdleRule> rules = [] {
    std::vector<IdleRule> rules;
    for (const auto& r : train_option_table())
      for (const IdleWith& w : r.idle) rules.push_back(row_rule(r.flag, w));
    const std::vector<IdleRule>& rest = idle_rules();
    rules.insert(rules.end(), rest.begin(), rest.end());
    return rules;
  }();
  return rules;
}

}  // namespace

void refuse_idle_options(const CLI::App& cmd) {
  OptionLookup args;
  args.has = [&](const char* name) { return cmd.get_option_no_throw(name) != nullptr; };
  args.given = [&](const char* name) {
    const CLI::Option* o = cmd.get_option_no_throw(name);
    return o != nullptr && o->count() > 0;
  };
  args.value = [&](const char* name) -> std::string {
    const CLI::Option* o = cmd.get_option_no_throw(name);
    if (o == nullptr) return "";
    return o->count() > 0 ? o->as<std::string>() : o->get_default_str();
  };
  const auto found = find_idle_option(args, command_line_rules());
  if (!found) return;
  const IdleRule& r = *found->rule;
  usage_fail("{}: {} means nothing with {}{}{} ({})", cmd.get_name(), found->idle, r.trigger,
             r.flag ? "" : " ", found->value, r.why);
}

}  // namespace stoker
