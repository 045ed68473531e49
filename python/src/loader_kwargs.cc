// SPDX-License-Identifier: Apache-2.0
#include "python/src/loader_kwargs.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/system_info.h"
#include "tools/idle_rules.h"
#include "tools/loader_options.h"

namespace stoker::py {

namespace pyb = pybind11;

namespace {

// Batches Python may hold past the next one without slowing the reader: the loop variable
// of `for images, labels in loader` still holds the previous batch while the next is asked for.
constexpr size_t kDefaultKeep = 1;

std::string default_reader() {
  return fmt::format("threads:{}", online_cpus());
}

std::string type_name(const pyb::handle& v) {
  return pyb::str(pyb::type::of(v).attr("__name__"));
}

[[noreturn]] void wrong_type(const std::string& name, const char* want, const pyb::handle& v) {
  throw pyb::type_error(fmt::format("{} must be {}, not {}", name, want, type_name(v)));
}

// bool is an int in Python: refused where a count is meant, as a typo guard.
template <class T>
T as_int(const std::string& name, const pyb::handle& v, long long lo, long long hi) {
  if (!PyLong_Check(v.ptr()) || PyBool_Check(v.ptr())) wrong_type(name, "an int", v);
  const long long x = v.cast<long long>();
  if (x < lo || x > hi) {
    throw pyb::value_error(fmt::format("{} must be in [{}, {}], got {}", name, lo, hi, x));
  }
  return static_cast<T>(x);
}

// Three per-channel numbers (R, G, B), finite, and positive where `positive`.
std::array<float, 3> as_triple(const std::string& name, const pyb::handle& v, bool positive) {
  if (!(PyTuple_Check(v.ptr()) || PyList_Check(v.ptr())))
    wrong_type(name, "a sequence of three floats", v);
  if (pyb::len(v) != 3)  // the right type, the wrong value
    throw pyb::value_error(
        fmt::format("{} must hold three numbers (R, G, B), got {}", name, pyb::len(v)));
  std::array<float, 3> out{};
  const pyb::sequence seq = pyb::reinterpret_borrow<pyb::sequence>(v);
  for (size_t c = 0; c < 3; ++c) {
    const pyb::handle x = seq[c];
    if (PyBool_Check(x.ptr()) || !(PyFloat_Check(x.ptr()) || PyLong_Check(x.ptr())))
      wrong_type(name, "a sequence of three floats", v);
    out[c] = x.cast<float>();
    if (!std::isfinite(out[c]) || (positive && !(out[c] > 0)))
      throw pyb::value_error(fmt::format("{} must hold three {}numbers, got {}", name,
                                         positive ? "positive " : "finite ", out[c]));
  }
  return out;
}

bool as_bool(const std::string& name, const pyb::handle& v) {
  if (!PyBool_Check(v.ptr())) wrong_type(name, "a bool", v);
  return v.cast<bool>();
}

std::string as_str(const std::string& name, const pyb::handle& v) {
  if (!PyUnicode_Check(v.ptr())) wrong_type(name, "a str", v);
  return v.cast<std::string>();
}

// Runs a CLI parser on the value so a bad one is a ValueError naming the argument.
template <class Parse>
void check(const std::string& name, const std::string& value, Parse parse) {
  try {
    parse(value);
  } catch (const Error& e) {
    throw pyb::value_error(fmt::format("{}: {}", name, e.what()));
  }
}

// One row per Python name: the CLI option it mirrors (nullptr: Python only; docs/PYTHON.md
// lists exactly these names, tests/python/test_errors.py checks), its default, and where a
// value goes. CLI flags that turn something off (--no-shuffle) are positive here
// (shuffle=True), as Python APIs are.
struct PyOption {
  const char* name;
  const char* cli;
  std::function<pyb::object(const LoaderOptions&)> fallback;
  std::function<void(LoaderOptions&, LoaderConfig&, const pyb::handle&)> set;
};

const std::vector<PyOption>& py_options() {
  using O = LoaderOptions;
  using C = LoaderConfig;
  using H = const pyb::handle&;
  static const std::vector<PyOption> m = {
      {"batch_size", "--batch", [](const O& o) { return pyb::cast(o.batch); }, {[](O& o, C&, H v) {
         o.batch = as_int<size_t>("batch_size", v, 1, 1 << 20);
       }}},
      {"prefetch",
       "--prefetch",
       [](const O& o) { return pyb::cast(o.prefetch); },
       {[](O& o, C&, H v) { o.prefetch = as_int<size_t>("prefetch", v, 1, 1024); }}},
      {"keep", nullptr, [](const O&) { return pyb::cast(kDefaultKeep); }, {[](O&, C& c, H v) {
         c.keep = as_int<size_t>("keep", v, 0, 1024);
       }}},
      // Data parallelism: this process's shard, by `mpirun stoker train`'s rule
      // (loader/sampler/sampler.h).
      {"rank", "(mpirun's rank)", [](const O&) { return pyb::cast(0); }, {[](O&, C& c, H v) {
         c.sampler.rank = as_int<uint32_t>("rank", v, 0, 1 << 20);
       }}},
      {"world_size", "(mpirun's -np)", [](const O&) { return pyb::cast(1); }, {[](O&, C& c, H v) {
         c.sampler.world = as_int<uint32_t>("world_size", v, 1, 1 << 20);
       }}},
      {"reader",
       "--reader",
       [](const O&) { return pyb::cast(default_reader()); },
       {[](O&, C& c, H v) {
         const std::string s = as_str("reader", v);
         check("reader", s, [&](const std::string& t) { c.reader = parse_reader(t); });
       }}},
      {"transform",
       "--transform",
       [](const O& o) { return pyb::cast(o.transform); },
       {[](O& o, C&, H v) {
         o.transform = as_str("transform", v);
         check("transform", o.transform, parse_transform);
       }}},
      {"size", "--size", [](const O& o) { return pyb::cast(o.size); }, {[](O& o, C&, H v) {
         // An int (square) or (height, width), as torchvision's sizes.
         if (PyTuple_Check(v.ptr()) || PyList_Check(v.ptr())) {
           const pyb::sequence hw = pyb::reinterpret_borrow<pyb::sequence>(v);
           if (hw.size() != 2) wrong_type("size", "an int or a (height, width) pair", v);
           o.height = as_int<int>("size[0]", hw[0], 8, 8192);
           o.size = as_int<int>("size[1]", hw[1], 8, 8192);
           if (o.height == o.size) o.height = 0;
         } else if (PyUnicode_Check(v.ptr())) {  // the CLI's "HxW" is a pair here
           throw pyb::type_error(fmt::format(
               "size must be an int or a (height, width) pair, not str ('{}': the CLI's HxW "
               "is size=(H, W) here)",
               v.cast<std::string>()));
         } else {
           if (!PyLong_Check(v.ptr()) || PyBool_Check(v.ptr()))
             wrong_type("size", "an int or a (height, width) pair", v);
           o.size = as_int<int>("size", v, 8, 8192);
           o.height = 0;
         }
       }}},
      {"mean",
       "--mean",
       [](const O& o) { return pyb::object(pyb::make_tuple(o.mean[0], o.mean[1], o.mean[2])); },
       {[](O& o, C&, H v) { o.mean = as_triple("mean", v, false); }}},
      {"std",
       "--std",
       [](const O& o) { return pyb::object(pyb::make_tuple(o.std[0], o.std[1], o.std[2])); },
       {[](O& o, C&, H v) { o.std = as_triple("std", v, true); }}},
      {"flip", "--flip", [](const O& o) { return pyb::cast(o.flip); }, {[](O& o, C&, H v) {
         if (PyBool_Check(v.ptr()) || !(PyFloat_Check(v.ptr()) || PyLong_Check(v.ptr())))
           wrong_type("flip", "a float", v);
         o.flip = v.cast<double>();
         if (!(o.flip >= 0 && o.flip <= 1))
           throw pyb::value_error(fmt::format("flip must be in [0, 1], got {}", o.flip));
       }}},
      {"dtype", "--dtype", [](const O& o) { return pyb::cast(o.dtype); }, {[](O& o, C&, H v) {
         o.dtype = as_str("dtype", v);
         check("dtype", o.dtype, parse_dtype);
       }}},
      {"layout", "--layout", [](const O& o) { return pyb::cast(o.layout); }, {[](O& o, C&, H v) {
         o.layout = as_str("layout", v);
         check("layout", o.layout, parse_layout);
       }}},
      {"seed", "--seed", [](const O& o) { return pyb::cast(o.seed); }, {[](O& o, C&, H v) {
         if (!PyLong_Check(v.ptr()) || PyBool_Check(v.ptr())) wrong_type("seed", "an int", v);
         try {
           o.seed = v.cast<uint64_t>();
         } catch (const pyb::cast_error&) {
           throw pyb::value_error("seed must be in [0, 2**64)");
         }
       }}},
      {"shuffle",
       "--no-shuffle (inverted)",
       [](const O& o) { return pyb::cast(!o.no_shuffle); },
       {[](O& o, C&, H v) { o.no_shuffle = !as_bool("shuffle", v); }}},
      {"drop_last",
       "--drop-last",
       [](const O& o) { return pyb::cast(o.drop_last); },
       {[](O& o, C&, H v) { o.drop_last = as_bool("drop_last", v); }}},
      {"on_error",
       "--on-error",
       [](const O& o) { return pyb::cast(o.on_error); },
       {[](O& o, C&, H v) {
         o.on_error = as_str("on_error", v);
         check("on_error", o.on_error, parse_error_policy);
       }}},
      {"max_pixels",
       "--max-pixels",
       [](const O& o) { return pyb::cast(o.max_pixels); },
       {[](O& o, C&, H v) { o.max_pixels = as_int<uint64_t>("max_pixels", v, 1, 1LL << 62); }}},
      {"dct_scaling",
       "--no-dct-scaling (inverted)",
       [](const O& o) { return pyb::cast(!o.no_dct_scaling); },
       {[](O& o, C&, H v) { o.no_dct_scaling = !as_bool("dct_scaling", v); }}},
      {"partial_decode",
       "--no-partial-decode (inverted)",
       [](const O& o) { return pyb::cast(!o.no_partial_decode); },
       {[](O& o, C&, H v) { o.no_partial_decode = !as_bool("partial_decode", v); }}},
      {"decode",
       "--no-decode (inverted)",
       [](const O& o) { return pyb::cast(!o.no_decode); },
       {[](O& o, C&, H v) { o.no_decode = !as_bool("decode", v); }}},
      {"direct", "--direct", [](const O& o) { return pyb::cast(o.direct); }, {[](O& o, C&, H v) {
         o.direct = as_bool("direct", v);
       }}},
      {"shard_order",
       "--shard-order",
       [](const O& o) { return pyb::cast(o.shard_order); },
       {[](O& o, C&, H v) {
         o.shard_order = as_str("shard_order", v);
         check("shard_order", o.shard_order, parse_shard_order);
       }}},
      {"shuffle_buffer",
       "--shuffle-buffer",
       [](const O& o) { return pyb::cast(o.shuffle_buffer); },
       {[](O& o, C&, H v) {
         o.shuffle_buffer = as_int<size_t>("shuffle_buffer", v, 0, 1LL << 40);
       }}},
      {"source_kind",
       "--source",
       [](const O& o) { return pyb::cast(o.source); },
       {[](O& o, C&, H v) {
         o.source = as_str("source_kind", v);
         check("source_kind", o.source, parse_source_kind);
       }}},
      {"null_file",
       "--null-file",
       [](const O& o) { return pyb::cast(o.null_file); },
       {[](O& o, C&, H v) { o.null_file = as_str("null_file", v); }}},
      {"warn", nullptr, [](const O&) { return pyb::cast(true); }, {[](O&, C& c, H v) {
         c.warn = as_bool("warn", v);
       }}},
      {"jitter", "--jitter", [](const O& o) { return pyb::cast(o.jitter); }, {[](O& o, C&, H v) {
         o.jitter = as_str("jitter", v);
         check("jitter", o.jitter, [](const std::string& s) {
           ColorConfig c;
           parse_jitter(s, c);
         });
       }}},
      {"grayscale",
       "--grayscale",
       [](const O& o) { return pyb::cast(o.grayscale); },
       {[](O& o, C&, H v) {
         if (PyBool_Check(v.ptr()) || !(PyFloat_Check(v.ptr()) || PyLong_Check(v.ptr())))
           wrong_type("grayscale", "a float", v);
         o.grayscale = v.cast<double>();
         if (!(o.grayscale >= 0 && o.grayscale <= 1))
           throw pyb::value_error(fmt::format("grayscale must be in [0, 1], got {}", o.grayscale));
       }}},
      {"resize_filter",
       "--resize-filter",
       [](const O& o) { return pyb::cast(o.resize_filter); },
       {[](O& o, C&, H v) {
         o.resize_filter = as_str("resize_filter", v);
         check("resize_filter", o.resize_filter, parse_resize_filter);
       }}},
      {"size_schedule",
       "--size-schedule",
       [](const O& o) { return pyb::cast(o.size_schedule); },
       {[](O& o, C&, H v) {
         o.size_schedule = as_str("size_schedule", v);
         check("size_schedule", o.size_schedule,
               [](const std::string& t) { parse_size_schedule(t, "size_schedule"); });
       }}},
  };
  return m;
}

// The CLI option a row mirrors ("--no-decode" of "--no-decode (inverted)"); "" for none.
std::string cli_option(const PyOption& r) {
  if (r.cli == nullptr || r.cli[0] != '-') return "";
  const std::string s = r.cli;
  return s.substr(0, s.find(' '));
}

const PyOption* row_of_cli(const char* cli) {
  for (const PyOption& r : py_options())
    if (cli_option(r) == cli) return &r;
  return nullptr;
}

// The CLI's idle-option rules (tools/idle_rules.h) over the Python arguments: an argument
// stands for its CLI option as the same command line would give it (a bool for a flag is
// the flag given when on: decode=False is --no-decode, decode=True no flag at all).
void refuse_idle_kwargs(const pyb::dict& kwargs) {
  const auto passed = [&](const char* cli) -> const PyOption* {
    const PyOption* r = row_of_cli(cli);
    return r != nullptr && kwargs.contains(r->name) ? r : nullptr;
  };
  OptionLookup args;
  args.has = [](const char* cli) { return row_of_cli(cli) != nullptr; };
  args.given = [&](const char* cli) {
    const PyOption* r = passed(cli);
    if (r == nullptr) return false;
    const pyb::handle v = kwargs[r->name];
    if (!PyBool_Check(v.ptr())) return true;
    return v.cast<bool>() != (std::string(r->cli).find("(inverted)") != std::string::npos);
  };
  args.value = [&](const char* cli) -> std::string {
    const PyOption* r = row_of_cli(cli);
    if (r == nullptr) return "";
    const pyb::object v = passed(cli) ? pyb::reinterpret_borrow<pyb::object>(kwargs[r->name])
                                      : r->fallback(LoaderOptions{});
    return pyb::str(v);
  };
  const auto found = find_idle_option(args);
  if (!found) return;
  const PyOption* idle = row_of_cli(found->idle);
  const PyOption* trigger = row_of_cli(found->rule->trigger);
  const std::string trigger_value =
      passed(found->rule->trigger) ? std::string(pyb::repr(kwargs[trigger->name]))
                                   : std::string(pyb::repr(trigger->fallback(LoaderOptions{})));
  throw pyb::value_error(fmt::format("{} means nothing with {}={} ({}; the CLI refuses {} with {})",
                                     idle->name, trigger->name, trigger_value, found->rule->why,
                                     found->idle, found->rule->trigger));
}

}  // namespace

LoaderConfig config_from_kwargs(const pyb::dict& kwargs) {
  LoaderOptions o;
  LoaderConfig extra;  // what LoaderOptions does not carry: reader, keep, warn
  extra.reader = parse_reader(default_reader());
  extra.keep = kDefaultKeep;
  for (const auto& [k, v] : kwargs) {
    const std::string name = pyb::str(k);
    const auto& rows = py_options();
    const auto it =
        std::find_if(rows.begin(), rows.end(), [&](const PyOption& r) { return name == r.name; });
    if (it == rows.end()) {
      throw pyb::type_error(fmt::format("Loader() got an unexpected keyword argument '{}'", name));
    }
    it->set(o, extra, v);
  }
  refuse_idle_kwargs(kwargs);
  if (kwargs.contains("size") && kwargs.contains("size_schedule"))
    throw pyb::value_error("give size or size_schedule, not both (a schedule sets every size)");
  LoaderConfig c;
  try {
    c = o.to_config();
  } catch (const Error& e) {
    throw pyb::value_error(e.what());
  }
  c.reader = extra.reader;
  c.keep = extra.keep;
  c.sampler.rank = extra.sampler.rank;
  c.sampler.world = extra.sampler.world;
  if (c.sampler.rank >= c.sampler.world)
    throw pyb::value_error(
        fmt::format("rank must be below world_size ({}), got {}", c.sampler.world, c.sampler.rank));
  c.warn = extra.warn;
  if (c.source.direct && c.reader.kind != ReaderSpec::Kind::uring) {
    throw pyb::value_error(fmt::format(
        "direct=True needs a uring reader (O_DIRECT wants aligned buffers); reader {} reads "
        "through the page cache",
        c.reader.text()));
  }
  return c;
}

pyb::dict default_kwargs() {
  const LoaderOptions o;
  pyb::dict d;
  for (const PyOption& r : py_options()) d[r.name] = r.fallback(o);
  return d;
}

pyb::dict cli_names() {
  pyb::dict d;
  for (const PyOption& r : py_options())
    d[r.name] = r.cli != nullptr ? pyb::object(pyb::str(r.cli)) : pyb::object(pyb::none());
  return d;
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
