// SPDX-License-Identifier: Apache-2.0
#include "tools/options/idle_options.h"

#include <string>

#include "common/error.h"
#include "tools/options/idle_rules.h"

namespace stoker {

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
  const auto found = find_idle_option(args);
  if (!found) return;
  const IdleRule& r = *found->rule;
  usage_fail("{}: {} means nothing with {}{}{} ({})", cmd.get_name(), found->idle, r.trigger,
             r.flag ? "" : " ", found->value, r.why);
}

}  // namespace stoker
