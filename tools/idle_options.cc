// SPDX-License-Identifier: Apache-2.0
#include "tools/idle_options.h"

#include <fmt/format.h>

#include <initializer_list>
#include <string>

#include "augment/crop.h"
#include "common/error.h"
#include "train/lr_schedule.h"
#include "train/sgd.h"

namespace stoker {
namespace {

bool given(const CLI::App& cmd, const char* name) {
  const CLI::Option* o = cmd.get_option_no_throw(name);
  return o != nullptr && o->count() > 0;
}

// The value in effect: given, else the option's default (empty when it has none).
std::string value(const CLI::App& cmd, const char* name) {
  const CLI::Option* o = cmd.get_option_no_throw(name);
  if (o == nullptr) return "";
  return o->count() > 0 ? o->as<std::string>() : o->get_default_str();
}

void refuse_any(const CLI::App& cmd, std::initializer_list<const char*> idle,
                const std::string& because) {
  for (const char* o : idle)
    if (given(cmd, o)) usage_fail("{}: {} means nothing {}", cmd.get_name(), o, because);
}

}  // namespace

void refuse_idle_options(const CLI::App& cmd) {
  const std::string transform = value(cmd, "--transform");
  if (!transform.empty() && parse_transform(transform) == TransformKind::center_crop)
    refuse_any(cmd, {"--flip", "--jitter", "--grayscale"},
               fmt::format("with --transform {} (evaluation's centre crop: no flip, no colour "
                           "augmentation)",
                           transform));
  if (given(cmd, "--no-decode"))
    refuse_any(
        cmd,
        {"--transform", "--size", "--flip", "--jitter", "--grayscale", "--mean", "--std", "--dtype",
         "--layout", "--resize-filter", "--no-dct-scaling", "--no-partial-decode"},
        "with --no-decode (files are read, not decoded)");
  // A resumed run's schedule and optimiser come from its checkpoint unless given again.
  const bool resumed = given(cmd, "--resume");
  if (cmd.get_option_no_throw("--schedule") != nullptr && (!resumed || given(cmd, "--schedule"))) {
    const std::string s = value(cmd, "--schedule");
    const LrSchedule::Kind kind = s.empty() ? LrSchedule::Kind::cosine : parse_lr_kind(s);
    if (kind != LrSchedule::Kind::step)
      refuse_any(cmd, {"--milestones", "--gamma"},
                 fmt::format("with --schedule {} (they shape a step schedule)", s));
    if (kind != LrSchedule::Kind::cosine)
      refuse_any(cmd, {"--min-lr"},
                 fmt::format("with --schedule {} (it ends a cosine schedule)", s));
  }
  if (cmd.get_option_no_throw("--optimizer") != nullptr &&
      (!resumed || given(cmd, "--optimizer"))) {
    const std::string o = value(cmd, "--optimizer");
    if (!o.empty() && parse_optimizer(o) != Optimizer::lars)
      refuse_any(cmd, {"--lars-eta"}, fmt::format("with --optimizer {} (it is LARS's)", o));
  }
}

}  // namespace stoker
