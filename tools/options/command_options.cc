// SPDX-License-Identifier: Apache-2.0
#include "tools/options/command_options.h"

#include <fmt/format.h>

#include <algorithm>

#include "tools/options/option_checks.h"

namespace stoker {

namespace {

constexpr DecodeMode kDecodeModes[] = {DecodeMode::cpu, DecodeMode::gpu, DecodeMode::automatic};

// "a, b or c".
std::string or_list(const std::vector<std::string_view>& words) {
  std::string s;
  for (size_t i = 0; i < words.size(); ++i)
    s += fmt::format("{}{}", i == 0 ? "" : i + 1 == words.size() ? " or " : ", ", words[i]);
  return s;
}

CommandOptionRow integer_row(const char* flag, uint64_t lo, uint64_t hi) {
  CommandOptionRow r{flag};
  r.shape = ValueShape::integer;
  r.bounds.kind = Bounds::Kind::integer;
  r.bounds.min = lo;
  r.bounds.max = hi;
  return r;
}

CommandOptionRow path_row(const char* flag) {
  CommandOptionRow r{flag};
  r.show_default = false;  // none: nothing is written unless asked
  return r;
}

// "a,b,c" as its items ("" is one empty item).
std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  size_t begin = 0;
  while (true) {
    const size_t comma = text.find(',', begin);
    items.push_back(text.substr(begin, comma - begin));
    if (comma == std::string::npos) return items;
    begin = comma + 1;
  }
}

// --decode-arena and --decode-memory size GPU decode, which --decode cpu never makes. Study's
// --decode is a list (cpu,gpu): idle only when every word is cpu; a word that is none of
// the three is not idle here (the option's own parse names it).
IdleWith sizes_gpu_decode() {
  return {"--decode", "cpu", "it sizes GPU decode", [](const std::string& v) {
            const std::vector<std::string> words = split_commas(v);
            return v.empty() ||
                   std::ranges::all_of(words, [](const std::string& w) { return w == "cpu"; });
          }};
}

std::vector<CommandOptionRow> make_table() {
  // One bound per word, the same in every command: 2^30 steps or batches is past any run,
  // and fits each command's field (study's are int).
  constexpr uint64_t kMaxSteps = uint64_t(1) << 30;
  std::vector<CommandOptionRow> t;
  CommandOptionRow steps = integer_row("--steps", 1, kMaxSteps);
  steps.aliases = {{"--iterations", "study"}};
  t.push_back(std::move(steps));
  CommandOptionRow epochs = integer_row("--epochs", 1, uint64_t(1) << 20);
  epochs.synthetic_idle = true;  // random tensors have no epochs
  t.push_back(std::move(epochs));
  CommandOptionRow warmup = integer_row("--warmup", 0, kMaxSteps);
  warmup.aliases = {{"--timing-warmup", "train"}};
  t.push_back(std::move(warmup));
  t.push_back(path_row("--json"));
  t.push_back(path_row("--trace"));
  CommandOptionRow decode{"--decode"};
  decode.words = {{"cpu", "the loader's threads decode"},
                  {"gpu", "nvJPEG decodes the crop window on the GPU"},
                  {"auto", "gpu where the CPU falls short of a cuda trainer, else cpu"}};
  decode.noun = "decode";
  decode.type = "WHERE";
  decode.synthetic_idle = true;
  decode.parse = [](const std::string& s) { parse_decode_mode(s); };
  t.push_back(std::move(decode));
  CommandOptionRow arena = integer_row("--decode-arena", 1, 1 << 16);
  arena.show_default = false;  // 0: half a MiB per image, said in the help
  arena.idle = {sizes_gpu_decode()};
  arena.synthetic_idle = true;
  t.push_back(std::move(arena));
  CommandOptionRow memory = integer_row("--decode-memory", 16, 1 << 20);
  memory.idle = {sizes_gpu_decode()};
  memory.synthetic_idle = true;
  t.push_back(std::move(memory));
  return t;
}

}  // namespace

DecodeMode parse_decode_mode(std::string_view word) {
  for (DecodeMode m : kDecodeModes)
    if (word == decode_mode_name(m)) return m;
  fail("unknown decode '{}': expected cpu, gpu or auto", word);
}

std::string_view decode_mode_name(DecodeMode m) {
  switch (m) {
    case DecodeMode::cpu:
      return "cpu";
    case DecodeMode::gpu:
      return "gpu";
    case DecodeMode::automatic:
      return "auto";
  }
  return "?";
}

const std::vector<CommandOptionRow>& command_option_table() {
  static const std::vector<CommandOptionRow> table = make_table();
  return table;
}

const CommandOptionRow* command_option(std::string_view flag) {
  for (const CommandOptionRow& r : command_option_table())
    if (flag == r.flag) return &r;
  return nullptr;
}

std::vector<std::string> command_words(const CommandOptionRow& row, const CommandUse& use,
                                       const std::string& text) {
  std::vector<std::string_view> taken = use.words;
  if (taken.empty())
    for (const Word& w : row.words) taken.emplace_back(w.word);
  const std::vector<std::string> items = use.list ? split_commas(text) : std::vector{text};
  const std::string in = use.list ? fmt::format(" in '{}'", text) : "";
  for (size_t i = 0; i < items.size(); ++i) {
    if (std::find(taken.begin(), taken.end(), items[i]) == taken.end())
      fail("unknown {} '{}'{}: expected {}", row.noun, items[i], in, or_list(taken));
    if (std::find(items.begin(), items.begin() + ptrdiff_t(i), items[i]) !=
        items.begin() + ptrdiff_t(i))
      fail("'{}' given twice in '{}'", items[i], text);
    row.parse(items[i]);  // a word this command takes is one the run can read
  }
  return items;
}

std::optional<CLI::Validator> command_check(const CommandOptionRow& row, const CommandUse& use) {
  if (row.bounds.kind == Bounds::Kind::integer) return integer_in(row.bounds.min, row.bounds.max);
  if (row.words.empty()) return std::nullopt;
  return parsed_by([&row, use](const std::string& s) { command_words(row, use, s); },
                   use.list ? "LIST" : row.type);
}

std::string command_names(const CommandOptionRow& row, const std::string& command) {
  std::string names = row.flag;
  for (const CommandAlias& a : row.aliases)
    if (command == a.command) names += std::string(",") + a.flag;
  return names;
}

}  // namespace stoker
