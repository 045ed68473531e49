// SPDX-License-Identifier: Apache-2.0
#include "tools/usage_hint.h"

#include <fmt/format.h>

#include <algorithm>

namespace stoker {

size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: Levenshtein's table plus adjacent transpositions.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::string nearest_name(std::string_view word, const std::vector<std::string>& names) {
  const size_t limit = std::clamp<size_t>(word.size() / 3, 1, 2);
  std::string best;
  size_t best_d = limit + 1;
  for (const std::string& n : names) {
    const size_t d = edit_distance(word, n);
    if (d < best_d) best = n, best_d = d;
  }
  return best;
}

namespace {

std::vector<std::string> subcommand_names(const CLI::App& cmd) {
  std::vector<std::string> out;
  for (const CLI::App* s : cmd.get_subcommands([](const CLI::App*) { return true; }))
    out.push_back(s->get_name());
  return out;
}

const CLI::App* subcommand_named(const CLI::App& cmd, const std::string& word) {
  const auto found = cmd.get_subcommands([&](const CLI::App* s) { return s->check_name(word); });
  return found.empty() ? nullptr : found.front();
}

std::string option_hint(const CLI::App& cmd, const std::string& arg) {
  const std::string name = arg.substr(0, arg.find('='));
  if (name == "--help" || name == "--version" || cmd.get_option_no_throw(name) != nullptr)
    return "";
  std::vector<std::string> names;
  for (const CLI::Option* o : cmd.get_options())
    for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
  const std::string near = nearest_name(name, names);
  return near.empty() ? ""
                      : fmt::format("'{}' is not an option of {}: did you mean '{}'?", name,
                                    cmd.get_name(), near);
}

}  // namespace

std::string usage_hint(const CLI::App& app, int argc, const char* const* argv) {
  const CLI::App* cmd = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    if (word.rfind("--", 0) == 0) {
      if (cmd == &app) continue;  // --help, --version: CLI11 says the rest
      if (std::string hint = option_hint(*cmd, word); !hint.empty()) return hint;
      continue;
    }
    if (word.empty() || word[0] == '-') continue;
    if (const CLI::App* sub = subcommand_named(*cmd, word)) {
      cmd = sub;
      continue;
    }
    // The first word must name a subcommand (checkpoint's too); later ones are values.
    if (cmd == &app || !cmd->get_subcommands([](const CLI::App*) { return true; }).empty()) {
      const std::vector<std::string> names = subcommand_names(*cmd);
      const std::string near = nearest_name(word, names);
      return fmt::format("'{}' is not a {}subcommand{} (they are: {})", word,
                         cmd == &app ? "" : cmd->get_name() + " ",
                         near.empty() ? "" : fmt::format(": did you mean '{}'?", near),
                         fmt::join(names, ", "));
    }
  }
  return "";
}

}  // namespace stoker
