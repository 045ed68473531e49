// SPDX-License-Identifier: Apache-2.0
// One table per option vocabulary (train/train_options.h, tools/loader_options.h): each row
// names an option once (its JSON key, its command-line flag, help, default and what a
// --resume does with it) and the table drives the command-line registration, the JSON a
// checkpoint and a --json context store, and the restore from a checkpoint. A new option is
// one new row; nothing else to keep in step.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.h"

namespace stoker {

// What a --resume does with an option.
enum class OnResume {
  kept,      // stored in the checkpoint; the resumed run takes it, a different one is refused
  may_grow,  // stored; a value given on the command line wins (--total-steps)
  global,    // stored, restored by its own rule (--batch: the global batch, train_options.cc)
  per_run,   // not stored: each run says (threads, prefetch, ...)
};

template <class S>
struct OptionRow {
  const char* key;   // JSON key (stored run options, --json contexts)
  const char* flag;  // the command-line option that sets it; nullptr: none
  const char* help;
  OnResume resume = OnResume::per_run;
  uint32_t group = 0;  // which registrations include it (the table's own bits)
  bool show_default = true;
  std::optional<CLI::Validator> check;
  std::function<nlohmann::json(const S&)> get;
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
  r.get = [m](const S& s) { return nlohmann::json(s.*m); };
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
        o = app.add_flag(row.flag, s.*m, row.help);
      } else {
        o = app.add_option(row.flag, s.*m, row.help);
        if (row.show_default) o->capture_default_str();
      }
      if (row.check) o->check(*row.check);
      return o;
    };
  return r;
}

// Registers the rows of `table` whose group has a bit of `groups` (0: every row).
template <class S>
void add_rows(const std::vector<OptionRow<S>>& table, CLI::App& app, S& s, uint32_t groups) {
  for (const OptionRow<S>& r : table)
    if (r.add && (groups == 0 || (r.group & groups) != 0)) r.add(app, s, r);
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
