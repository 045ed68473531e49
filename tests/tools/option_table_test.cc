// SPDX-License-Identifier: Apache-2.0
// Walks the loader's option table (tools/options/loader_options.h) row by row: each parses its own
// default, its bounds and words are what the command line enforces, its sample is valid and
// not the default, its Python name is its own; and each idle rule the rows make holds on the
// real commands: every loader option with `train --synthetic` but those its random tensors
// use, and each source-specific option (--direct) with each reader. stoker.Loader's side of
// the same rows: tests/python/test_option_rows.py. A new row is walked here unasked.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"
#include "tools/commands.h"
#include "tools/options/command_options.h"
#include "tools/options/idle_options.h"
#include "tools/options/idle_rules.h"
#include "tools/options/loader_options.h"
#include "tools/setup/train_options.h"
#include "tools/study/study_spec.h"

namespace stoker {
namespace {

using Row = OptionRow<LoaderOptions>;

// The registered rows (the one without `add`, --size's height, rides on --size's).
std::vector<const Row*> rows() {
  std::vector<const Row*> out;
  for (const Row& r : loader_option_table())
    if (r.add) out.push_back(&r);
  return out;
}

// Every loader option registered on a fresh app, parsed from `args`.
struct Parsed {
  LoaderOptions o;
  CLI::App app;
  explicit Parsed(std::vector<std::string> args) {
    o.add_to(app);
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    app.parse(args);
  }
  nlohmann::json json() const { return loader_options_json(o); }
};

bool accepted(std::vector<std::string> args) {
  try {
    Parsed p(std::move(args));
    return true;
  } catch (const CLI::ParseError&) {
    return false;
  }
}

// A valid value of the row other than its default, as a command line gives it (empty for a
// flag): the row's sample, else one its words or bounds give.
std::vector<std::string> sample_args(const Row& r) {
  if (r.shape == ValueShape::flag) return {r.flag};
  if (!r.example.empty()) return {r.flag, r.example};
  const nlohmann::json d = Parsed({}).json();
  std::vector<std::string> candidates;
  for (const Word& w : r.words) candidates.push_back(w.word);
  if (r.bounds.kind == Bounds::Kind::integer)
    candidates = {std::to_string(r.bounds.min), std::to_string(r.bounds.min + 1)};
  if (r.bounds.kind == Bounds::Kind::number)
    candidates = {fmt::format("{:g}", r.bounds.hi), fmt::format("{:g}", r.bounds.lo)};
  for (const std::string& c : candidates)
    if (accepted({r.flag, c}) && Parsed({r.flag, c}).json() != d) return {r.flag, c};
  ADD_FAILURE() << r.flag << ": no sample (give the row one)";
  return {r.flag};
}

TEST(OptionTable, EveryRowParsesItsDefault) {
  CLI::App app;
  LoaderOptions o;
  o.reader = "serial";  // a command's default (the row's own is the command's to give)
  o.add_to(app);
  for (const Row* r : rows()) {
    if (r->shape == ValueShape::flag) continue;
    const std::string d = app.get_option(r->flag)->get_default_str();
    if (d.empty()) continue;  // none (--jitter): the option is off until given
    SCOPED_TRACE(r->flag);
    Parsed given({r->flag, d});
    Parsed plain({});
    plain.o.reader = given.o.reader = "";
    EXPECT_EQ(given.json(), plain.json()) << r->flag << " " << d;
  }
}

// The options' defaults are the library's (its structs hold them; the rows read them).
TEST(OptionTable, DefaultsAreTheLibrarysOwn) {
  const LoaderConfig c = LoaderOptions{}.to_config(), d;
  EXPECT_EQ(c.sampler.batch_size, d.sampler.batch_size);
  EXPECT_EQ(c.sampler.seed, d.sampler.seed);
  EXPECT_EQ(c.sampler.shuffle, d.sampler.shuffle);
  EXPECT_EQ(c.sampler.shard_order, d.sampler.shard_order);
  EXPECT_EQ(c.sampler.shuffle_buffer, d.sampler.shuffle_buffer);
  EXPECT_EQ(c.prefetch, d.prefetch);
  EXPECT_EQ(c.transform.kind, d.transform.kind);
  EXPECT_EQ(c.transform.size, d.transform.size);
  EXPECT_EQ(c.transform.flip, d.transform.flip);
  EXPECT_EQ(c.transform.filter, d.transform.filter);
  EXPECT_EQ(c.transform.color.grayscale, d.transform.color.grayscale);
  EXPECT_EQ(c.output.dtype, d.output.dtype);
  EXPECT_EQ(c.output.layout, d.output.layout);
  EXPECT_EQ(c.output.mean, d.output.mean);
  EXPECT_EQ(c.output.std, d.output.std);
  EXPECT_EQ(c.decode.max_pixels, d.decode.max_pixels);
  EXPECT_EQ(c.on_error, d.on_error);
  EXPECT_EQ(c.source.kind, d.source.kind);
}

// Each row's bounds are its command-line check: both ends taken, one step past them refused.
template <class S>
void expect_bounds_checked(const std::vector<OptionRow<S>>& table) {
  const auto accepted = [&](const char* flag, const std::string& v) {
    S s;
    CLI::App app;
    add_rows<S>(table, app, s, [](const auto&) { return true; });
    std::vector<std::string> args = {v, flag};  // CLI11 takes them last first
    try {
      app.parse(args);
      return true;
    } catch (const CLI::ParseError&) {
      return false;
    }
  };
  int rows = 0;
  for (const OptionRow<S>& r : table) {
    if (!r.add || r.bounds.kind == Bounds::Kind::none) continue;
    SCOPED_TRACE(r.flag);
    ++rows;
    const Bounds& b = r.bounds;
    if (b.kind == Bounds::Kind::integer) {
      EXPECT_TRUE(accepted(r.flag, std::to_string(b.min)));
      EXPECT_TRUE(accepted(r.flag, std::to_string(b.max)));
      if (b.min > 0) {
        EXPECT_FALSE(accepted(r.flag, std::to_string(b.min - 1)));
      }
      if (b.max < UINT64_MAX) {
        EXPECT_FALSE(accepted(r.flag, std::to_string(b.max + 1)));
      }
      EXPECT_FALSE(accepted(r.flag, "-1"));
      EXPECT_FALSE(accepted(r.flag, "1.5"));
    } else {
      EXPECT_EQ(accepted(r.flag, fmt::format("{}", b.lo)), !b.open_lo);
      EXPECT_TRUE(accepted(r.flag, fmt::format("{}", b.hi)));
      EXPECT_FALSE(accepted(r.flag, fmt::format("{}", b.lo - 0.01)));
      if (!std::isinf(b.hi)) {
        EXPECT_FALSE(accepted(r.flag, fmt::format("{}", b.hi + 0.01)));
      }
    }
  }
  EXPECT_GE(rows, 5);
}

TEST(OptionTable, BoundsAreTheCommandLinesChecks) {
  expect_bounds_checked(loader_option_table());
  expect_bounds_checked(train_option_table());  // the trainer's rows carry theirs too
}

TEST(OptionTable, EveryWordIsAcceptedAndNothingElse) {
  for (const Row* r : rows()) {
    SCOPED_TRACE(r->flag);
    for (const Word& w : r->words) {
      EXPECT_TRUE(accepted({r->flag, w.word})) << w.word;
      EXPECT_NE(r->help.find(w.word), std::string::npos) << "the help lacks " << w.word;
    }
    if (!r->words.empty()) {
      EXPECT_FALSE(accepted({r->flag, "no-such-word"}));
    }
  }
}

TEST(OptionTable, EverySampleIsValidAndNotTheDefault) {
  const nlohmann::json d = Parsed({}).json();
  for (const Row* r : rows()) {
    SCOPED_TRACE(r->flag);
    const std::vector<std::string> args = sample_args(*r);
    ASSERT_TRUE(accepted(args));
    EXPECT_NE(Parsed(args).json(), d);
  }
}

TEST(OptionTable, FlagsAndPythonNamesAreEachRowsOwn) {
  std::set<std::string> flags, names;
  for (const Row* r : rows()) {
    SCOPED_TRACE(r->flag);
    EXPECT_TRUE(flags.insert(r->flag).second);
    ASSERT_NE(r->py, nullptr) << "every loader option is stoker.Loader's too";
    EXPECT_TRUE(names.insert(r->py).second);
    EXPECT_EQ(loader_option(r->flag), r);
    for (const char* a : r->aliases) EXPECT_EQ(loader_option(a), r);
    // An inverted name is the flag's negation: --no-X is X.
    if (r->inverted) {
      std::string name = r->py;
      std::replace(name.begin(), name.end(), '_', '-');
      EXPECT_EQ(std::string(r->flag), "--no-" + name);
    }
    for (const IdleWith& w : r->idle) EXPECT_NE(loader_option(w.trigger), nullptr) << w.trigger;
  }
}

// Thrown after a command line is taken, before the command would run.
struct Taken {};

// The stoker app's `name` subcommand, with main.cc's idle rule check and no run.
struct Command {
  CLI::App app;
  CLI::App* sub = nullptr;
  explicit Command(const std::string& name) {
    add_bench_command(app);
    add_peek_command(app);
    add_probe_command(app);
    add_train_command(app);
    add_eval_command(app);
    add_study_command(app);
    add_model_command(app);
    sub = app.get_subcommand(name);
    sub->parse_complete_callback([s = sub] {
      refuse_idle_options(*s);
      throw Taken{};  // the command's callback owns its options: it stays, and never runs
    });
  }
  bool has(const char* flag) const { return sub->get_option_no_throw(flag) != nullptr; }
  // "" when the command line is taken; else the usage error.
  std::string refusal(std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());
    try {
      app.parse(args);
    } catch (const UsageError& e) {
      return e.what();
    } catch (const Taken&) {
      return "";
    }
    ADD_FAILURE() << "the command line was not parsed to its end";
    return "";
  }
};

// The positional arguments and required options each command needs to parse.
std::vector<std::string> base_args(const std::string& command) {
  static const std::map<std::string, std::vector<std::string>> m = {
      {"bench", {"bench", "data"}},
      {"peek", {"peek", "data"}},
      {"probe", {"probe", "data"}},
      {"train", {"train", "data"}},
      {"eval", {"eval", "data", "--checkpoint", "ck.safetensors"}},
      {"study", {"study", "data"}},
  };
  return m.at(command);
}

TEST(IdleRules, SyntheticRefusesEveryLoaderOptionButWhatItsTensorsUse) {
  int refused = 0;
  for (const Row* r : rows()) {
    Command train("train");
    if (!train.has(r->flag)) continue;
    SCOPED_TRACE(r->flag);
    std::vector<std::string> args = {"train", "--synthetic"};
    for (const std::string& a : sample_args(*r)) args.push_back(a);
    const std::string why = train.refusal(args);
    if (r->synthetic_too) {
      EXPECT_EQ(why, "");
    } else {
      ++refused;
      EXPECT_NE(why.find(fmt::format("train: {} means nothing with --synthetic", r->flag)),
                std::string::npos)
          << why;
    }
  }
  EXPECT_GE(refused, 15);  // --jitter, --grayscale, --resize-filter, --reader among them
}

// Each option that means nothing unless another's value says so (--direct: a uring reader),
// on every command that has both, with every value of the other: its words, or each reader.
TEST(IdleRules, EachSourceSpecificOptionWithEachReaderOnEveryCommand) {
  const std::vector<std::string> readers = {"serial", "threads:2", "processes:2", "uring:4:2",
                                            "uring:4,threads:2"};
  int cases = 0;
  for (const char* command : {"bench", "peek", "probe", "train", "eval", "study"}) {
    for (const Row* r : rows()) {
      for (const IdleWith& w : r->idle) {
        const Row* trigger = loader_option(w.trigger);
        std::vector<std::string> values;
        for (const Word& x : trigger->words) values.push_back(x.word);
        if (std::string(w.trigger) == "--reader") values = readers;
        if (values.empty()) values = {w.example};
        for (const std::string& v : values) {
          Command c(command);
          if (!c.has(r->flag) || !c.has(w.trigger)) continue;
          SCOPED_TRACE(fmt::format("{} {} {} {}", command, w.trigger, v, r->flag));
          std::vector<std::string> args = base_args(command);
          args.push_back(w.trigger);
          if (!w.flag) args.push_back(v);  // a flag trigger (--no-decode) applies when given
          for (const std::string& a : sample_args(*r)) args.push_back(a);
          const std::string why = c.refusal(args);
          if (w.flag) {
            EXPECT_NE(
                why.find(fmt::format("{} means nothing with {} ({})", r->flag, w.trigger, w.why)),
                std::string::npos)
                << why;
          } else if (w.when(v)) {
            EXPECT_NE(why.find(fmt::format("{} means nothing with {} {}", r->flag, w.trigger, v)),
                      std::string::npos)
                << why;
          } else {
            EXPECT_EQ(why, "");
          }
          ++cases;
        }
      }
    }
  }
  EXPECT_GE(cases, 20);
}

// The rows that say they mean nothing without a decode or under evaluation's centre crop: the
// whole set, so that a row losing its rule (or gaining one) is seen here.
TEST(IdleRules, NoDecodeAndTheCentreCropSilenceTheirRows) {
  std::set<std::string> without_decode, centre_crop;
  for (const IdleRule& r : idle_rules()) {
    if (std::string(r.trigger) == "--no-decode") {
      EXPECT_TRUE(r.flag);
      without_decode.insert(r.idle.begin(), r.idle.end());
    }
    if (std::string(r.trigger) == "--transform") centre_crop.insert(r.idle.begin(), r.idle.end());
  }
  EXPECT_EQ(without_decode,
            std::set<std::string>({"--transform", "--size", "--flip", "--jitter", "--grayscale",
                                   "--mean", "--std", "--dtype", "--layout", "--resize-filter",
                                   "--no-dct-scaling", "--no-partial-decode"}));
  EXPECT_EQ(centre_crop, std::set<std::string>({"--flip", "--jitter", "--grayscale"}));
}

// The trainer rows' rules (--milestones under a cosine schedule, --lars-eta under SGD), with
// each schedule and optimizer: refused where the rule says, taken where it does not.
TEST(IdleRules, TheTrainerRowsRulesHoldWithEachScheduleAndOptimizer) {
  const std::map<std::string, std::vector<std::string>> trigger_values = {
      {"--schedule", {"constant", "step", "cosine"}}, {"--optimizer", {"sgd", "lars"}}};
  const std::map<std::string, std::string> idle_values = {
      {"--milestones", "3"}, {"--gamma", "0.5"}, {"--min-lr", "0.01"}, {"--lars-eta", "0.01"}};
  int refused = 0, taken = 0;
  for (const auto& r : train_option_table()) {
    for (const IdleWith& w : r.idle) {
      ASSERT_TRUE(trigger_values.contains(w.trigger)) << w.trigger << ": add its values here";
      ASSERT_TRUE(idle_values.contains(r.flag)) << r.flag << ": add a value here";
      EXPECT_TRUE(w.from_checkpoint) << r.flag;  // every trainer trigger is kept
      for (const std::string& v : trigger_values.at(w.trigger)) {
        SCOPED_TRACE(fmt::format("{} {} {}", w.trigger, v, r.flag));
        Command train("train");
        const std::string why =
            train.refusal({"train", "data", w.trigger, v, r.flag, idle_values.at(r.flag)});
        if (w.when(v)) {
          ++refused;
          EXPECT_NE(why.find(fmt::format("train: {} means nothing with {} {} ({})", r.flag,
                                         w.trigger, v, w.why)),
                    std::string::npos)
              << why;
        } else {
          ++taken;
          EXPECT_EQ(why, "");
        }
      }
    }
  }
  EXPECT_EQ(refused, 7);  // --milestones and --gamma x 2, --min-lr x 2, --lars-eta x 1
  EXPECT_EQ(taken, 4);
  // A resumed run takes the schedule from its checkpoint: not given again, nothing is refused.
  Command resumed("train");
  EXPECT_EQ(resumed.refusal({"train", "data", "--resume", "ck.safetensors", "--milestones", "3"}),
            "");
  Command fresh("train");
  EXPECT_NE(fresh.refusal({"train", "data", "--milestones", "3"}), "");
}

TEST(IdleRules, DirectIsRefusedWithTheDefaultReaderOfEveryCommandThatRunsOne) {
  for (const char* command : {"bench", "train", "eval"}) {
    Command c(command);
    std::vector<std::string> args = base_args(command);
    args.push_back("--direct");
    EXPECT_NE(c.refusal(args).find("--direct means nothing with --reader"), std::string::npos)
        << command;
  }
  Command probe("probe");  // its default reader under --direct is uring
  EXPECT_EQ(probe.refusal({"probe", "data", "--direct"}), "");
}

// The options several commands share (tools/options/command_options.h), on every command that
// registers them.
const std::vector<const char*> kCommands = {"bench", "peek",  "probe", "train",
                                            "eval",  "study", "model"};

// The `model` command has no data argument.
std::vector<std::string> command_args(const std::string& command) {
  if (command == "model") return {"model", "resnet18"};
  return base_args(command);
}

// A value of the row the command takes, other than the default where it has words.
std::string command_sample(const CommandOptionRow& r) {
  if (r.bounds.kind == Bounds::Kind::integer) return std::to_string(r.bounds.min);
  if (!r.words.empty()) return "gpu";
  return "out.json";
}

TEST(CommandOptions, EveryRowIsRegisteredByACommandWithItsOneBound) {
  for (const CommandOptionRow& r : command_option_table()) {
    SCOPED_TRACE(r.flag);
    int commands = 0;
    for (const char* command : kCommands) {
      Command c(command);
      if (!c.has(r.flag)) continue;
      ++commands;
      SCOPED_TRACE(command);
      std::vector<std::string> args = command_args(command);
      if (std::string(command) == "train" && !r.idle.empty())
        args.insert(args.end(), {"--decode", "gpu"});  // a row idle without it
      const auto given = [&](const std::string& v) {
        std::vector<std::string> a = args;
        a.insert(a.end(), {r.flag, v});
        try {
          return c.refusal(a) == "";
        } catch (const CLI::ParseError&) {
          return false;
        }
      };
      if (r.bounds.kind != Bounds::Kind::integer) continue;
      EXPECT_TRUE(given(std::to_string(r.bounds.min)));
      EXPECT_TRUE(given(std::to_string(r.bounds.max)));
      if (r.bounds.min > 0) {
        EXPECT_FALSE(given(std::to_string(r.bounds.min - 1)));
      }
      EXPECT_FALSE(given(std::to_string(r.bounds.max + 1)));
      EXPECT_FALSE(given("-1"));
    }
    EXPECT_GE(commands, 1) << "no command registers it";
  }
  // --json is every writing command's, --warmup bench's, train's and the study's.
  for (const char* command : {"bench", "probe", "train", "eval", "model"})
    EXPECT_TRUE(Command(command).has("--json")) << command;
  for (const char* command : {"bench", "train", "study"})
    EXPECT_TRUE(Command(command).has("--warmup")) << command;
}

// An older spelling is taken by the command that had it, and by no other.
TEST(CommandOptions, AliasesAreTheirCommandsOwn) {
  int aliases = 0;
  for (const CommandOptionRow& r : command_option_table())
    for (const CommandAlias& a : r.aliases)
      for (const char* command : kCommands) {
        Command c(command);
        if (!c.has(r.flag)) continue;
        SCOPED_TRACE(fmt::format("{} {}", command, a.flag));
        EXPECT_EQ(c.has(a.flag), std::string(command) == a.command);
        if (std::string(command) != a.command) continue;
        ++aliases;
        std::vector<std::string> args = command_args(command);
        args.insert(args.end(), {a.flag, std::to_string(r.bounds.min + 1)});
        EXPECT_EQ(c.refusal(args), "");
        EXPECT_EQ(c.sub->get_option(r.flag)->as<int64_t>(), int64_t(r.bounds.min + 1));
      }
  EXPECT_EQ(aliases, 2);  // --timing-warmup (train), --iterations (study)
}

// --decode's one vocabulary: each word is the parser's, each command takes its part of it.
TEST(CommandOptions, DecodeWordsAreOneVocabulary) {
  const CommandOptionRow& row = *command_option("--decode");
  ASSERT_EQ(row.words.size(), 3u);
  for (const Word& w : row.words) EXPECT_EQ(decode_mode_name(parse_decode_mode(w.word)), w.word);
  EXPECT_THROW(parse_decode_mode("tpu"), Error);
  const std::map<std::string, std::vector<std::string>> taken = {
      {"train", {"cpu", "gpu", "auto"}}, {"bench", {"cpu", "gpu"}}, {"study", {"cpu", "gpu"}}};
  for (const auto& [command, words] : taken) {
    for (const Word& w : row.words) {
      Command c(command);
      std::vector<std::string> args = command_args(command);
      args.insert(args.end(), {"--decode", w.word});
      const bool takes = std::find(words.begin(), words.end(), w.word) != words.end();
      try {
        EXPECT_EQ(c.refusal(args), "") << command << " " << w.word;
        EXPECT_TRUE(takes) << command << " took --decode " << w.word;
      } catch (const CLI::ValidationError& e) {
        EXPECT_FALSE(takes) << e.what();
        EXPECT_NE(std::string(e.what()).find(fmt::format("unknown decode '{}'", w.word)),
                  std::string::npos)
            << e.what();
      }
    }
  }
  // The study's list: both devices, each once, in the order given.
  EXPECT_EQ(parse_study_decodes("gpu,cpu"), (std::vector<bool>{true, false}));
  for (const char* bad : {"gpu,gpu", "auto", "cpu,", ""}) {
    EXPECT_THROW(parse_study_decodes(bad), Error) << bad;
    Command study("study");
    EXPECT_THROW(study.refusal({"study", "data", "--decode", bad}), CLI::ParseError) << bad;
  }
}

// The idle rules the rows make: --decode-arena and --decode-memory mean nothing with --decode
// cpu (given or the default), something with gpu and auto; --epochs, --decode and its sizes
// nothing with `train --synthetic`.
TEST(CommandOptions, IdleRulesComeFromTheRows) {
  int rules = 0, synthetic = 0;
  for (const CommandOptionRow& r : command_option_table()) {
    for (const IdleWith& w : r.idle) {
      const CommandOptionRow* trigger = command_option(w.trigger);
      ASSERT_NE(trigger, nullptr) << w.trigger;
      for (const Word& v : trigger->words) {
        Command train("train");
        SCOPED_TRACE(fmt::format("{} {} {}", w.trigger, v.word, r.flag));
        const std::string why =
            train.refusal({"train", "data", w.trigger, v.word, r.flag, command_sample(r)});
        if (w.when(v.word)) {
          ++rules;
          EXPECT_NE(why.find(fmt::format("train: {} means nothing with {} {} ({})", r.flag,
                                         w.trigger, v.word, w.why)),
                    std::string::npos)
              << why;
        } else {
          EXPECT_EQ(why, "");
        }
      }
      Command train("train");  // the trigger's default
      EXPECT_NE(train.refusal({"train", "data", r.flag, command_sample(r)}), "") << r.flag;
    }
    Command train("train");
    if (!train.has(r.flag)) continue;
    const std::string why = train.refusal({"train", "--synthetic", r.flag, command_sample(r)});
    EXPECT_EQ(why.find(fmt::format("train: {} means nothing with --synthetic", r.flag)) !=
                  std::string::npos,
              r.synthetic_idle)
        << r.flag << ": " << why;
    synthetic += r.synthetic_idle;
  }
  EXPECT_EQ(rules, 2);      // --decode-arena, --decode-memory with --decode cpu
  EXPECT_EQ(synthetic, 4);  // --epochs, --decode, --decode-arena, --decode-memory
}

// Study's --decode is a list: the GPU decode sizes are idle only when every word is cpu, and
// a list is never handed to the one-word parser (gpu_check's `study --decode cpu,gpu` was
// refused with "unknown decode 'cpu,gpu'").
TEST(CommandOptions, StudysDecodeListIsIdleOnlyWhenEveryWordIsCpu) {
  int rules = 0;
  for (const CommandOptionRow& r : command_option_table()) {
    for (const IdleWith& w : r.idle) {
      ++rules;
      EXPECT_TRUE(w.when("")) << r.flag;
      EXPECT_TRUE(w.when("cpu")) << r.flag;
      EXPECT_FALSE(w.when("cpu,gpu")) << r.flag;
      EXPECT_FALSE(w.when("gpu,cpu")) << r.flag;
    }
  }
  EXPECT_EQ(rules, 2);
  Command study("study");
  EXPECT_EQ(study.refusal({"study", "data", "--decode", "cpu,gpu", "--decode-memory", "512"}), "");
}

TEST(ReaderOption, StudysOlderNameIsStillTaken) {
  Command study("study");
  EXPECT_EQ(study.refusal({"study", "data", "--readers", "serial,threads:1..2"}), "");
  EXPECT_EQ(study.sub->get_option("--reader")->as<std::string>(), "serial,threads:1..2");
}

}  // namespace
}  // namespace stoker
