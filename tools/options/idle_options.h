// SPDX-License-Identifier: Apache-2.0
// Options that would do nothing in the combination given (a flip under evaluation's centre
// crop, milestones under a cosine schedule, transforms with --no-decode) are usage errors,
// as `--synthetic --reader` is: a silently ignored option is a wrong conclusion waiting to
// happen. The rules are tools/options/idle_rules.h's (stoker.Loader applies the loader's), with
// the trainer rows' added; this reads the parsed command line only.
#pragma once

#include <CLI/CLI.hpp>

namespace stoker {

// stoker::UsageError (exit 2) naming the idle option and what makes it idle; nothing when
// every option given does something. Options the command does not have are skipped.
void refuse_idle_options(const CLI::App& cmd);

}  // namespace stoker
