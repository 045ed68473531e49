// SPDX-License-Identifier: Apache-2.0
// The rules of options that do nothing in a combination (a flip under evaluation's centre
// crop, transforms with --no-decode, milestones under a cosine schedule, a loader option under
// `train --synthetic`, --direct without a uring reader), by CLI option name. Every rule but
// --synthetic's is made from the row of the option it silences (IdleWith,
// tools/options/option_table.h): the loader's rows and the command options'
// (tools/options/command_options.h) here, in idle_rules(); the trainer's
// (tools/setup/train_options.h) by the CLI, which adds them (tools/options/idle_options.cc).
// The CLI and stoker.Loader (python/src/loader_kwargs.cc) each read their own arguments through
// an OptionLookup and refuse what this finds. Free of the trainer, so the Python module links
// it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace stoker {

// One rule: the `idle` options mean nothing while `trigger`'s value in effect makes
// `applies` true.
struct IdleRule {
  const char* trigger;            // a CLI option, e.g. "--transform"
  bool flag;                      // trigger takes no value (--no-decode): applies when given
  std::vector<const char*> idle;  // CLI options it leaves without effect
  const char* why;                // what the trigger means, for the message
  const char* example;            // a trigger value that makes the rule apply (tests walk it)
  bool from_checkpoint;           // a resumed run takes the trigger from its checkpoint,
                                  // so the rule holds only where the trigger is given again
  std::function<bool(const std::string& value)> applies;  // unused where `flag`
};

struct IdleWith;

// The rule a row's IdleWith makes: the row's `flag` means nothing under it.
IdleRule row_rule(const char* flag, const IdleWith& w);

// The loader's and the command options' rules, and --synthetic's.
const std::vector<IdleRule>& idle_rules();

// One command's arguments, by CLI option name.
struct OptionLookup {
  std::function<bool(const char*)> has;           // the command has this option
  std::function<bool(const char*)> given;         // it was given (a flag: switched on)
  std::function<std::string(const char*)> value;  // given, else its default ("" if none)
};

// An idle option found: `idle` means nothing with `trigger` (its `value`) because `why`.
struct IdleFinding {
  const IdleRule* rule;
  const char* idle;
  std::string value;
};

// The first option given that does nothing with the others, by `rules` in order (else
// idle_rules()); nothing when every one does something.
std::optional<IdleFinding> find_idle_option(const OptionLookup& args);
std::optional<IdleFinding> find_idle_option(const OptionLookup& args,
                                            const std::vector<IdleRule>& rules);

}  // namespace stoker
