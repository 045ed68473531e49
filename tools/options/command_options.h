// SPDX-License-Identifier: Apache-2.0
// The options several commands share beside the loader's and the trainer's tables: how long a
// run is (--steps, --epochs, --warmup), what it writes (--json, --trace) and where it decodes
// (--decode, --decode-arena, --decode-memory). One row each, as the other tables'
// (tools/options/option_table.h: Bounds, Word, IdleWith): each word has one grammar and one bound
// here, whatever the command, and the idle rules (tools/options/idle_rules.h) are made from the
// rows. A command registers the rows it has (add_command_option) into its own field, with its
// own default (set before registering, as the loader's --batch is) and its own help (bench's
// warm-up counts batches, train's steps).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "common/error.h"
#include "tools/options/option_table.h"

namespace stoker {

// Where a run decodes its images: --decode's one vocabulary (cpu, gpu, auto).
enum class DecodeMode { cpu, gpu, automatic };
// stoker::Error "unknown decode 'x': expected cpu, gpu or auto".
DecodeMode parse_decode_mode(std::string_view word);
std::string_view decode_mode_name(DecodeMode m);

// An older spelling that one command still takes (docs/CLI.md: deprecated).
struct CommandAlias {
  const char* flag;
  const char* command;
};

struct CommandOptionRow {
  const char* flag;
  ValueShape shape = ValueShape::text;
  Bounds bounds;             // integer rows: the one bound every command checks
  std::vector<Word> words;   // word rows (--decode): the vocabulary, each parsed by `parse`
  const char* noun = "";     // word rows: what a word names, for the message ("decode")
  const char* type = "";     // CLI11's name for the value in the help (WHERE, LIST)
  bool show_default = true;  // the command's default goes into the help
  std::vector<CommandAlias> aliases;
  std::vector<IdleWith> idle;   // what it means nothing with (another command row's value)
  bool synthetic_idle = false;  // means nothing to `train --synthetic` (random tensors)
  std::function<void(const std::string&)> parse;  // word rows: the run's own parser
};

// Every row, once.
const std::vector<CommandOptionRow>& command_option_table();
// The row whose flag is `flag`; nullptr when none.
const CommandOptionRow* command_option(std::string_view flag);

// How one command takes a row: its help; for a word row, the words it takes (empty: every
// one) and whether it takes a comma-separated list of them, each once (study's cpu,gpu).
struct CommandUse {
  std::string help;
  std::vector<std::string_view> words = {};
  bool list = false;
  bool show_default = true;  // false: the help says what the default means instead
};

// The words of `text` as `use` takes them, in order; stoker::Error naming the first word that
// is not one it takes ("unknown decode 'x' in 'cpu,x': expected cpu or gpu"), or one given
// twice.
std::vector<std::string> command_words(const CommandOptionRow& row, const CommandUse& use,
                                       const std::string& text);

// The row's check of a value as `use` takes it: its bound, or its words; none for a path.
std::optional<CLI::Validator> command_check(const CommandOptionRow& row, const CommandUse& use);

// "--warmup,--timing-warmup": the row's flag and the aliases `command` still takes.
std::string command_names(const CommandOptionRow& row, const std::string& command);

// Registers `flag`'s row into `app` (a subcommand: its name picks the aliases), writing into
// `field`, whose value now is the default shown.
template <class T>
CLI::Option* add_command_option(CLI::App& app, const char* flag, T& field, const CommandUse& use) {
  const CommandOptionRow* row = command_option(flag);
  STOKER_CHECK_MSG(row != nullptr, "{} is not a row of command_option_table()", flag);
  if constexpr (std::is_integral_v<T>)
    STOKER_CHECK_MSG(row->bounds.max <= uint64_t(std::numeric_limits<T>::max()),
                     "{}: its bound {} does not fit the field", flag, row->bounds.max);
  CLI::Option* o = app.add_option(command_names(*row, app.get_name()), field, use.help);
  if (row->show_default && use.show_default) o->capture_default_str();
  if (auto check = command_check(*row, use)) o->check(*check);
  return o;
}

}  // namespace stoker
