// SPDX-License-Identifier: Apache-2.0
#include "python/src/loader_kwargs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/system_info.h"
#include "loader/tuning/tuning_candidates.h"
#include "tools/options/idle_rules.h"
#include "tools/options/loader_options.h"

namespace stoker::py {

namespace pyb = pybind11;

namespace {

using Row = OptionRow<LoaderOptions>;

// Batches Python may hold past the next one without slowing the reader: the loop variable
// of `for images, labels in loader` still holds the previous batch while the next is asked for.
constexpr size_t kDefaultKeep = 1;

std::string type_name(const pyb::handle& v) {
  return pyb::str(pyb::type::of(v).attr("__name__"));
}

[[noreturn]] void wrong_type(const std::string& name, const char* want, const pyb::handle& v) {
  throw pyb::type_error(fmt::format("{} must be {}, not {}", name, want, type_name(v)));
}

bool is_int(const pyb::handle& v) {
  return PyLong_Check(v.ptr()) && !PyBool_Check(v.ptr());  // bool is an int: a typo guard
}

bool is_number(const pyb::handle& v) {
  return !PyBool_Check(v.ptr()) && (PyFloat_Check(v.ptr()) || PyLong_Check(v.ptr()));
}

std::string bounds_text(const Bounds& b) {
  if (b.kind == Bounds::Kind::integer)
    return b.max >= uint64_t(INT64_MAX) ? fmt::format("an integer >= {}", b.min)
                                        : fmt::format("in [{}, {}]", b.min, b.max);
  return fmt::format("in {}{:g}, {:g}]", b.open_lo ? "(" : "[", b.lo, b.hi);
}

// An int within the row's bounds (every integer option is one of [0, 2**64)).
uint64_t as_integer(const std::string& name, const pyb::handle& v, const Bounds& b) {
  if (!is_int(v)) wrong_type(name, "an int", v);
  uint64_t x = 0;
  bool ok = pyb::int_(0).cast<pyb::object>() <= pyb::reinterpret_borrow<pyb::object>(v);
  if (ok) {
    x = PyLong_AsUnsignedLongLong(v.ptr());
    if (PyErr_Occurred()) {
      PyErr_Clear();
      ok = false;
    }
  }
  if (!ok || x < b.min || x > b.max)
    throw pyb::value_error(
        fmt::format("{} must be {}, got {}", name, bounds_text(b), std::string(pyb::repr(v))));
  return x;
}

double as_number(const std::string& name, const pyb::handle& v, const Bounds& b) {
  if (!is_number(v)) wrong_type(name, "a float", v);
  const double x = v.cast<double>();
  if (!(x >= b.lo && x <= b.hi) || (b.open_lo && x == b.lo))
    throw pyb::value_error(fmt::format("{} must be {}, got {}", name, bounds_text(b), x));
  return x;
}

bool as_bool(const std::string& name, const pyb::handle& v) {
  if (!PyBool_Check(v.ptr())) wrong_type(name, "a bool", v);
  return v.cast<bool>();
}

std::string as_str(const std::string& name, const pyb::handle& v) {
  if (!PyUnicode_Check(v.ptr())) wrong_type(name, "a str", v);
  return v.cast<std::string>();
}

// --size's text of an int (square) or a (height, width) pair, as torchvision's sizes.
std::string size_text(const pyb::handle& v) {
  if (PyTuple_Check(v.ptr()) || PyList_Check(v.ptr())) {
    const pyb::sequence hw = pyb::reinterpret_borrow<pyb::sequence>(v);
    if (hw.size() != 2 || !is_int(hw[0]) || !is_int(hw[1]))
      wrong_type("size", "an int or a (height, width) pair", v);
    return fmt::format("{}x{}", std::string(pyb::str(hw[0])), std::string(pyb::str(hw[1])));
  }
  if (PyUnicode_Check(v.ptr()))  // the CLI's "HxW" is a pair here
    throw pyb::type_error(fmt::format(
        "size must be an int or a (height, width) pair, not str ('{}': the CLI's HxW is "
        "size=(H, W) here)",
        v.cast<std::string>()));
  if (!is_int(v)) wrong_type("size", "an int or a (height, width) pair", v);
  return pyb::str(v);
}

// --mean's text "R,G,B" of a sequence of three numbers.
std::string triple_text(const std::string& name, const pyb::handle& v) {
  if (!(PyTuple_Check(v.ptr()) || PyList_Check(v.ptr())))
    wrong_type(name, "a sequence of three floats", v);
  if (pyb::len(v) != 3)  // the right type, the wrong value
    throw pyb::value_error(
        fmt::format("{} must hold three numbers (R, G, B), got {}", name, pyb::len(v)));
  std::string text;
  const pyb::sequence seq = pyb::reinterpret_borrow<pyb::sequence>(v);
  for (size_t c = 0; c < 3; ++c) {
    if (!is_number(seq[c])) wrong_type(name, "a sequence of three floats", v);
    text += fmt::format("{}{:.9g}", c ? "," : "", seq[c].cast<double>());
  }
  return text;
}

// One keyword argument into `o`, by the row's shape and bounds: a wrong type is a TypeError,
// a wrong value a ValueError, each naming the argument.
void set_from_python(const Row& r, LoaderOptions& o, const pyb::handle& v) {
  const std::string name = r.py;
  try {
    switch (r.shape) {
      case ValueShape::flag:
        r.set(o, as_bool(name, v) != r.inverted);
        return;
      case ValueShape::integer:
        r.set(o, as_integer(name, v, r.bounds));
        return;
      case ValueShape::number:
        r.set(o, as_number(name, v, r.bounds));
        return;
      case ValueShape::text: {
        std::string s = as_str(name, v);
        if (r.check) {
          const std::string error = (*r.check)(s);
          if (!error.empty()) throw pyb::value_error(fmt::format("{}: {}", name, error));
        }
        r.set(o, s);
        return;
      }
      case ValueShape::size:
        r.from_text(o, size_text(v));
        return;
      case ValueShape::triple:
        r.from_text(o, triple_text(name, v));
        return;
    }
  } catch (const CLI::Error& e) {  // the command line's parser of the text
    throw pyb::value_error(fmt::format("{}: {}", name, e.what()));
  } catch (const Error& e) {
    throw pyb::value_error(fmt::format("{}: {}", name, e.what()));
  }
}

pyb::object to_python(const nlohmann::json& j) {
  if (j.is_boolean()) return pyb::bool_(j.get<bool>());
  if (j.is_number_unsigned()) return pyb::int_(j.get<uint64_t>());
  if (j.is_number_integer()) return pyb::int_(j.get<int64_t>());
  if (j.is_number()) return pyb::float_(j.get<double>());
  if (j.is_string()) return pyb::str(j.get<std::string>());
  if (j.is_array()) {
    pyb::list l;
    for (const auto& x : j) l.append(to_python(x));
    return pyb::tuple(l);
  }
  return pyb::none();
}

// The options stoker.Loader starts from: the CLI's, with the one reader a command runs.
const LoaderOptions& python_defaults() {
  static const LoaderOptions o = [] {
    LoaderOptions d;
    d.reader = default_reader();
    return d;
  }();
  return o;
}

pyb::object default_of(const Row& r) {
  const nlohmann::json v = r.value(python_defaults());
  return r.shape == ValueShape::flag ? pyb::bool_(v.get<bool>() != r.inverted) : to_python(v);
}

// The CLI option a Python name stands for; the loader's rows alone (nullptr: none).
const Row* row_of_py(const std::string& name) {
  for (const Row& r : loader_option_table())
    if (r.py != nullptr && name == r.py) return &r;
  return nullptr;
}

const Row* row_of_cli(const char* cli) {
  const Row* r = loader_option(cli);
  return r != nullptr && r->py != nullptr ? r : nullptr;
}

// stoker.Loader's own arguments, which no command has: where a LoaderConfig field goes.
struct OwnArgument {
  const char* name;
  const char* cli;  // what stands for it on a command line (nullptr: nothing)
  std::function<pyb::object()> fallback;
  std::function<void(LoaderConfig&, const pyb::handle&)> set;
};

const std::vector<OwnArgument>& own_arguments() {
  using C = LoaderConfig;
  using H = const pyb::handle&;
  const auto count = [](const char* name, H v, uint64_t lo, uint64_t hi) {
    Bounds b;
    b.kind = Bounds::Kind::integer;
    b.min = lo;
    b.max = hi;
    return as_integer(name, v, b);
  };
  static const std::vector<OwnArgument> m = {
      {"keep", nullptr, [] { return pyb::cast(kDefaultKeep); },
       [count](C& c, H v) { c.keep = count("keep", v, 0, 1024); }},
      // Data parallelism: this process's shard, by `mpirun stoker train`'s rule
      // (loader/sampler/sampler.h).
      {"rank", "(mpirun's rank)", [] { return pyb::cast(0); },
       [count](C& c, H v) { c.sampler.rank = uint32_t(count("rank", v, 0, 1 << 20)); }},
      {"world_size", "(mpirun's -np)", [] { return pyb::cast(1); },
       [count](C& c, H v) { c.sampler.world = uint32_t(count("world_size", v, 1, 1 << 20)); }},
      {"warn", nullptr, [] { return pyb::cast(true); },
       [](C& c, H v) { c.warn = as_bool("warn", v); }},
  };
  return m;
}

// The CLI's idle-option rules (tools/options/idle_rules.h) over the Python arguments: an argument
// stands for its CLI option as the same command line would give it (a bool for a flag is
// the flag given when it differs from the row's inversion: decode=False is --no-decode,
// decode=True no flag at all).
void refuse_idle_kwargs(const pyb::dict& kwargs) {
  const auto passed = [&](const char* cli) -> const Row* {
    const Row* r = row_of_cli(cli);
    return r != nullptr && kwargs.contains(r->py) ? r : nullptr;
  };
  OptionLookup args;
  args.has = [](const char* cli) { return row_of_cli(cli) != nullptr; };
  args.given = [&](const char* cli) {
    const Row* r = passed(cli);
    if (r == nullptr) return false;
    const pyb::handle v = kwargs[r->py];
    return !PyBool_Check(v.ptr()) || v.cast<bool>() != r->inverted;
  };
  args.value = [&](const char* cli) -> std::string {
    const Row* r = row_of_cli(cli);
    if (r == nullptr) return "";
    return pyb::str(passed(cli) ? pyb::reinterpret_borrow<pyb::object>(kwargs[r->py])
                                : default_of(*r));
  };
  const auto found = find_idle_option(args);
  if (!found) return;
  const Row* idle = row_of_cli(found->idle);
  const Row* trigger = row_of_cli(found->rule->trigger);
  const pyb::object trigger_value = passed(found->rule->trigger)
                                        ? pyb::reinterpret_borrow<pyb::object>(kwargs[trigger->py])
                                        : default_of(*trigger);
  throw pyb::value_error(fmt::format("{} means nothing with {}={} ({}; the CLI refuses {} with {})",
                                     idle->py, trigger->py, std::string(pyb::repr(trigger_value)),
                                     found->rule->why, found->idle, found->rule->trigger));
}

}  // namespace

LoaderArgs loader_args(const pyb::dict& kwargs) {
  LoaderOptions o = python_defaults();
  LoaderConfig extra;  // what LoaderOptions does not carry: keep, rank, world, warn
  extra.keep = kDefaultKeep;
  for (const auto& [k, v] : kwargs) {
    const std::string name = pyb::str(k);
    if (const Row* r = row_of_py(name)) {
      set_from_python(*r, o, v);
      continue;
    }
    const auto& own = own_arguments();
    const auto it =
        std::find_if(own.begin(), own.end(), [&](const OwnArgument& a) { return name == a.name; });
    if (it == own.end())
      throw pyb::type_error(fmt::format("Loader() got an unexpected keyword argument '{}'", name));
    it->set(extra, v);
  }
  refuse_idle_kwargs(kwargs);
  LoaderArgs args;
  LoaderConfig& c = args.config;
  try {
    c = o.to_config();
    if (is_auto_reader(o.reader)) {  // chosen while the loop runs, from the default on
      c.reader = auto_start_reader(online_cpus());
      args.tune = o.tuner_limits();
    } else {
      c.reader = o.one_reader("stoker.Loader");
    }
  } catch (const Error& e) {
    throw pyb::value_error(e.what());
  }
  c.keep = extra.keep;
  c.sampler.rank = extra.sampler.rank;
  c.sampler.world = extra.sampler.world;
  if (c.sampler.rank >= c.sampler.world)
    throw pyb::value_error(
        fmt::format("rank must be below world_size ({}), got {}", c.sampler.world, c.sampler.rank));
  c.warn = extra.warn;
  return args;
}

pyb::dict default_kwargs() {
  pyb::dict d;
  for (const Row& r : loader_option_table())
    if (r.py != nullptr) d[r.py] = default_of(r);
  for (const OwnArgument& a : own_arguments()) d[a.name] = a.fallback();
  return d;
}

pyb::dict cli_names() {
  pyb::dict d;
  for (const Row& r : loader_option_table())
    if (r.py != nullptr)
      d[r.py] = pyb::str(r.inverted ? fmt::format("{} (inverted)", r.flag) : r.flag);
  for (const OwnArgument& a : own_arguments())
    d[a.name] = a.cli != nullptr ? pyb::object(pyb::str(a.cli)) : pyb::object(pyb::none());
  return d;
}

pyb::list option_rows() {
  pyb::list out;
  for (const Row& r : loader_option_table()) {
    if (r.py == nullptr) continue;
    pyb::dict d;
    d["python"] = r.py;
    d["cli"] = r.flag;
    d["inverted"] = r.inverted;
    d["default"] = default_of(r);
    d["example"] = r.example;
    if (r.bounds.kind == Bounds::Kind::integer) {
      d["min"] = pyb::int_(r.bounds.min);
      d["max"] = pyb::int_(r.bounds.max);
    } else if (r.bounds.kind == Bounds::Kind::number) {
      d["lo"] = r.bounds.lo;
      d["hi"] = r.bounds.hi;
    }
    pyb::list words;
    for (const Word& w : r.words) words.append(w.word);
    d["words"] = words;
    out.append(d);
  }
  return out;
}

pyb::list idle_rules_table() {
  pyb::list out;
  for (const IdleRule& r : idle_rules()) {
    pyb::dict d;
    d["trigger"] = r.trigger;
    d["flag"] = r.flag;
    d["example"] = r.example;
    pyb::list idle;
    for (const char* o : r.idle) idle.append(o);
    d["idle"] = idle;
    out.append(d);
  }
  return out;
}

}  // namespace stoker::py
