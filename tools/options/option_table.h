// SPDX-License-Identifier: Apache-2.0
// One table per option vocabulary (tools/setup/train_options.h,
// tools/options/loader_options.h; the options several commands share, whose fields are each
// command's own: tools/options/command_options.h): each row names an option once, as fio's struct
// fio_option does: its JSON key, command-line flag (and deprecated aliases), Python name and
// whether that name is the flag inverted, help, bounds, accepted words each with its help, what it
// means nothing with (an idle rule, tools/options/idle_rules.h) and what a --resume does with it.
// The table drives the command-line registration, stoker.Loader's keyword arguments
// (python/src/loader_kwargs.cc), the JSON a checkpoint and a --json context store, and the restore
// from a checkpoint. A new option is one new row; nothing else to keep in step. Defaults are the
// struct's (S{}), never a row's.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "common/error.h"
#include "tools/options/option_checks.h"

namespace stoker {

// What a --resume does with an option.
enum class OnResume {
  kept,      // stored in the checkpoint; the resumed run takes it, a different one is refused
  may_grow,  // stored; a value given on the command line wins (--total-steps, --conv-algo)
  global,    // stored, restored by its own rule (--batch: the global batch, train_options.cc)
  per_run,   // not stored: each run says (threads, prefetch, ...)
};

// The shape of a row's value, for the front ends that are not a command line (Python).
enum class ValueShape {
  flag,     // bool: given or not
  integer,  // an integer within `bounds`
  number,   // a real number within `bounds`
  text,     // a string; `check` (the parser of the run, or the words) judges it
  size,     // --size: N or HxW (Python: an int or a (height, width) pair)
  triple,   // --mean, --std: R,G,B (Python: a sequence of three numbers)
};

// Bounds as data: the command line's check and Python's are both made from them.
struct Bounds {
  enum class Kind { none, integer, number } kind = Kind::none;
  uint64_t min = 0, max = UINT64_MAX;  // integer
  double lo = 0, hi = 0;               // number
  bool open_lo = false;                // number: lo itself refused
};

// One accepted word of a row taking words, with what it means.
struct Word {
  const char* word;
  const char* help;
};

// The row means nothing while `trigger`'s value in effect (given, else its default) makes
// `when` true: one rule of tools/options/idle_rules.h. "--direct means nothing unless the reader is
// uring" is {--reader, when: a reader is not uring}.
struct IdleWith {
  const char* trigger;  // another row's CLI option
  const char* example;  // a trigger value under which the row means nothing (tests use it)
  const char* why;      // what the trigger means, for the message
  std::function<bool(const std::string&)> when;  // unused where `flag`
  bool flag = false;  // trigger takes no value (--no-decode): the row means nothing while given
  // The trigger is kept in a checkpoint (--schedule), which a resumed run takes: the rule then
  // holds only where the trigger is given again.
  bool from_checkpoint = false;
};

template <class S>
struct OptionRow {
  const char* key;   // JSON key (stored run options, --json contexts)
  const char* flag;  // the command-line option that sets it; nullptr: none
  std::string help;
  OnResume resume = OnResume::per_run;
  uint32_t group = 0;  // a table's own subset (train's backend options, which eval shares)
  bool show_default = true;
  std::optional<CLI::Validator> check;
  ValueShape shape = ValueShape::text;
  Bounds bounds;
  std::vector<Word> words;           // the accepted words (empty: not a word option)
  std::vector<const char*> aliases;  // older flags still accepted (docs/CLI.md: deprecated)
  const char* py = nullptr;          // stoker.Loader's name for it; nullptr: not in Python
  bool inverted = false;             // py is the flag's negation (shuffle: --no-shuffle)
  std::vector<IdleWith> idle;        // what it means nothing with
  bool synthetic_too = false;        // means something to `train --synthetic`'s tensors
  std::string example;               // a valid value other than the default ("": derived)
  // Sets the value from its command-line text: the size and triple shapes (--size, --mean),
  // whose text Python writes from its int, pair or sequence.
  std::function<void(S&, const std::string&)> from_text;
  std::function<nlohmann::json(const S&)> get;    // as stored (stored_as) and compared
  std::function<nlohmann::json(const S&)> value;  // as the field holds it (Python's defaults)
  std::function<void(S&, const nlohmann::json&)> set;
  // Registers `flag` into `app`, writing into `s`; empty: another row registers the flag
  // (--size sets both "size" and "height") or there is none.
  std::function<CLI::Option*(CLI::App&, S&, const OptionRow&)> add;

  OptionRow on_resume(OnResume r) && {
    resume = r;
    return std::move(*this);
  }
  OptionRow checked(CLI::Validator v) && {
    check = std::move(v);
    return std::move(*this);
  }
  OptionRow no_default() && {
    show_default = false;
    return std::move(*this);
  }
  OptionRow in(uint32_t g) && {
    group = g;
    return std::move(*this);
  }
  // An integer option in [lo, hi] / a number in [lo, hi]: the check is made from the bounds.
  OptionRow integer_range(uint64_t lo, uint64_t hi = UINT64_MAX) && {
    bounds.kind = Bounds::Kind::integer;
    bounds.min = lo;
    bounds.max = hi;
    check = integer_in(lo, hi);
    return std::move(*this);
  }
  OptionRow number_range(double lo, double hi, bool open_lo = false) && {
    bounds.kind = Bounds::Kind::number;
    bounds.lo = lo;
    bounds.hi = hi;
    bounds.open_lo = open_lo;
    check = number_in(lo, hi, open_lo);
    return std::move(*this);
  }
  // The accepted words, each with its help, appended to the help; `parse` (the run's own
  // parser, which may also take aliases) is the check, and a test holds every word to it.
  OptionRow accepts(std::vector<Word> w, std::function<void(const std::string&)> parse,
                    const char* what) && {
    words = std::move(w);
    std::string text;
    for (const Word& x : words)
      text += fmt::format("{}{} ({})", text.empty() ? "" : ", ", x.word, x.help);
    help += ": " + text;
    check = parsed_by(std::move(parse), what);
    return std::move(*this);
  }
  OptionRow also(const char* older) && {
    aliases.push_back(older);
    return std::move(*this);
  }
  OptionRow python(const char* name, bool inverted_flag = false) && {
    py = name;
    inverted = inverted_flag;
    return std::move(*this);
  }
  // Means nothing while `trigger`'s value makes `when` true (see IdleWith).
  OptionRow idle_with(const char* trigger, const char* example_value, const char* why,
                      std::function<bool(const std::string&)> when) && {
    idle.push_back({trigger, example_value, why, std::move(when)});
    return std::move(*this);
  }
  // The same, whole: a rule several rows share, a flag trigger, a trigger a checkpoint keeps.
  OptionRow idle_with(IdleWith w) && {
    idle.push_back(std::move(w));
    return std::move(*this);
  }
  OptionRow feeds_synthetic() && {
    synthetic_too = true;
    return std::move(*this);
  }
  OptionRow sample(std::string value) && {
    example = std::move(value);
    return std::move(*this);
  }
  OptionRow shaped(ValueShape s) && {
    shape = s;
    return std::move(*this);
  }
  // The flag and its aliases, as CLI11 takes them ("--reader,--readers").
  std::string names() const {
    std::string n = flag;
    for (const char* a : aliases) n += std::string(",") + a;
    return n;
  }
  // Stored and compared as `g` gives it instead of as the field is (a canonical name for one
  // written several ways).
  OptionRow stored_as(std::function<nlohmann::json(const S&)> g) && {
    get = std::move(g);
    return std::move(*this);
  }
  // Registered by `a` instead of by the field's type (a parser of text, an inverted flag).
  OptionRow added_by(std::function<CLI::Option*(CLI::App&, S&, const OptionRow&)> a) && {
    add = std::move(a);
    return std::move(*this);
  }
};

// A row for the member `m` that registers nothing itself (added_by, or another row's flag).
template <class S, class T>
OptionRow<S> field_row(const char* key, const char* flag, T S::*m, const char* help) {
  OptionRow<S> r{key, flag, help};
  if constexpr (std::is_same_v<T, bool>)
    r.shape = ValueShape::flag;
  else if constexpr (std::is_integral_v<T>)
    r.shape = ValueShape::integer;
  else if constexpr (std::is_floating_point_v<T>)
    r.shape = ValueShape::number;
  r.get = [m](const S& s) { return nlohmann::json(s.*m); };
  r.value = r.get;
  r.set = [m](S& s, const nlohmann::json& j) { s.*m = j.get<T>(); };
  return r;
}

// A row for the member `m`: a bool is a flag, anything else an option taking a value.
template <class S, class T>
OptionRow<S> option_row(const char* key, const char* flag, T S::*m, const char* help) {
  OptionRow<S> r = field_row(key, flag, m, help);
  if (flag != nullptr)
    r.add = [m](CLI::App& app, S& s, const OptionRow<S>& row) {
      CLI::Option* o = nullptr;
      if constexpr (std::is_same_v<T, bool>) {
        o = app.add_flag(row.names(), s.*m, row.help);
      } else {
        o = app.add_option(row.names(), s.*m, row.help);
        if (row.show_default) o->capture_default_str();
      }
      if (row.check) o->check(*row.check);
      return o;
    };
  return r;
}

// Registers the rows of `table` for which `wanted(row)` holds.
template <class S>
void add_rows(const std::vector<OptionRow<S>>& table, CLI::App& app, S& s,
              const std::function<bool(const OptionRow<S>&)>& wanted) {
  for (const OptionRow<S>& r : table)
    if (r.add && wanted(r)) r.add(app, s, r);
}

// Every row's key and value, or those a checkpoint stores (`stored_only`: not per_run).
template <class S>
nlohmann::json rows_json(const std::vector<OptionRow<S>>& table, const S& s, bool stored_only) {
  nlohmann::json j = nlohmann::json::object();
  for (const OptionRow<S>& r : table)
    if (!stored_only || r.resume != OnResume::per_run) j[r.key] = r.get(s);
  return j;
}

// Whether the command line gave the row's flag (a flag this command does not register: no).
template <class S>
bool given(const OptionRow<S>& r, const CLI::App& app) {
  return r.flag != nullptr && app.get_option_no_throw(r.flag) != nullptr && app.count(r.flag) > 0;
}

// The resume rule, the same for every row: the stored value (a key an older checkpoint lacks
// is the option's default, which every option keeps as the behaviour from before it
// existed) replaces the current one; a kept option given on the command line with another
// value is refused (stoker::Error naming `path`); a may_grow one given keeps its new value.
template <class S>
void restore_rows(const std::vector<OptionRow<S>>& table, S& s, const nlohmann::json& stored,
                  const std::string& path, const CLI::App& app) {
  const S defaults{};
  for (const OptionRow<S>& r : table) {
    if (r.resume != OnResume::kept && r.resume != OnResume::may_grow) continue;
    if (r.resume == OnResume::may_grow && given(r, app)) continue;
    S was = s;
    r.set(was, stored.contains(r.key) ? stored.at(r.key) : r.get(defaults));
    const nlohmann::json then = r.get(was), now = r.get(s);
    if (r.resume == OnResume::kept && given(r, app) && then != now)
      fail("{}: {} {} contradicts the run being resumed ({}); a resumed run keeps its options",
           path, r.flag, now.dump(), then.dump());
    r.set(s, then);
  }
}

}  // namespace stoker
