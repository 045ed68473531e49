// SPDX-License-Identifier: Apache-2.0
// "Did you mean": the hint after a usage error for a word the command line does not know,
// a subcommand (`stoker bnech`) or an option (`--reder`), with the nearest known name.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace stoker {

// Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`.
size_t edit_distance(std::string_view a, std::string_view b);

// The name of `names` nearest to `word` when it is near enough to be a typo of it (at most 2
// edits, and fewer than a third of the word's letters, at least 1), else "".
std::string nearest_name(std::string_view word, const std::vector<std::string>& names);

// The hint for argv (parsed by `app`, which refused it): the first word that is neither a
// subcommand nor an option of the command it follows, with the nearest name; "" when none.
std::string usage_hint(const CLI::App& app, int argc, const char* const* argv);

}  // namespace stoker
