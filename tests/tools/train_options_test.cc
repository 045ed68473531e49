// SPDX-License-Identifier: Apache-2.0
// --resume's one rule, over every row of the option tables (tools/options/option_table.h): a key an
// older checkpoint lacks is that option's default, and an option given on the command line
// that differs from the run being resumed is refused, the same for every kept option
// (--jitter as --lr); --total-steps alone may change. The command line is `stoker train`'s own
// registration, so each row is checked as a user would give it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "augment/collate.h"
#include "augment/crop.h"
#include "augment/imagenet.h"
#include "common/error.h"
#include "test_util.h"
#include "tools/gen/gen_dataset.h"
#include "tools/options/loader_options.h"
#include "tools/setup/train_options.h"
#include "tools/train/decode_choice.h"
#include "train/backend.h"
#include "train/conv_algorithm.h"
#include "train/gpu_decode.h"

namespace stoker {
namespace {

// A value other than the default for each option a resume keeps or may change. A new row
// without one fails EveryStoredOptionHasASample: add it here.
const std::map<std::string, std::vector<std::string>>& samples() {
  static const std::map<std::string, std::vector<std::string>> m = {
      {"--arch", {"--arch", "resnet18"}},
      {"--classes", {"--classes", "7"}},
      {"--zero-init-residual", {"--zero-init-residual"}},
      {"--precision", {"--precision", "bf16"}},
      {"--conv-algo", {"--conv-algo", "fixed:direct"}},
      {"--fusions", {"--fusions", "none"}},
      {"--lr", {"--lr", "0.5"}},
      {"--scale-lr", {"--scale-lr"}},
      {"--momentum", {"--momentum", "0.5"}},
      {"--nesterov", {"--nesterov"}},
      {"--weight-decay", {"--weight-decay", "0.01"}},
      {"--no-bn-decay", {"--no-bn-decay"}},
      {"--optimizer", {"--optimizer", "lars"}},
      {"--lars-eta", {"--lars-eta", "0.01"}},
      {"--sync-bn", {"--sync-bn"}},
      {"--schedule", {"--schedule", "step"}},
      {"--lr-warmup", {"--lr-warmup", "7"}},
      {"--milestones", {"--milestones", "3", "5"}},
      {"--gamma", {"--gamma", "0.5"}},
      {"--min-lr", {"--min-lr", "0.01"}},
      {"--total-steps", {"--total-steps", "99"}},
      {"--label-smoothing", {"--label-smoothing", "0.1"}},
      {"--batch", {"--batch", "5"}},
      {"--size", {"--size", "48x64"}},
      {"--mean", {"--mean", "0.5,0.5,0.5"}},
      {"--std", {"--std", "0.5,0.5,0.5"}},
      {"--transform", {"--transform", "center"}},
      {"--flip", {"--flip", "0.25"}},
      {"--seed", {"--seed", "9"}},
      {"--no-shuffle", {"--no-shuffle"}},
      {"--layout", {"--layout", "nhwc"}},
      {"--jitter", {"--jitter", "0.4,0.4,0.4,0.1"}},
      {"--grayscale", {"--grayscale", "0.2"}},
      {"--resize-filter", {"--resize-filter", "antialias"}},
      {"--size-schedule", {"--size-schedule", "32:64@0-2"}},
  };
  return m;
}

// The options as `stoker train` registers them, parsed from `args`.
struct Parsed {
  TrainOptions train;
  LoaderOptions loader;
  CLI::App app;

  explicit Parsed(std::vector<std::string> args) {
    train.add_to(app);
    loader.add_to(app, {"--no-decode", "--drop-last"});
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    app.parse(args);
  }
  nlohmann::json json() const { return train_options_json(train, loader); }
  void resume(const nlohmann::json& stored) {
    restore_train_options(train, loader, stored.dump(), "ck.safetensors", app);
  }
};

// What a checkpoint of a run with every default stores.
nlohmann::json stored_defaults() {
  return Parsed({}).json();
}

// The flags of the rows a resume reads (kept, may_grow, global), with their JSON keys.
std::vector<std::pair<std::string, std::string>> stored_flags() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& r : train_option_table())
    if (r.resume != OnResume::per_run && r.flag) out.emplace_back(r.flag, r.key);
  for (const auto& r : loader_option_table())
    if (r.resume != OnResume::per_run && r.flag) out.emplace_back(r.flag, r.key);
  return out;
}

// Whether a value given with --resume wins over the stored one (may_grow: --total-steps,
// --conv-algo, --fusions) rather than being refused.
bool given_wins_on_resume(const std::string& flag) {
  for (const auto& r : train_option_table())
    if (r.flag && r.flag == flag) return r.resume == OnResume::may_grow;
  return false;
}

// The trainer's defaults are the library's (SgdConfig, LrSchedule, BackendConfig), read from
// its structs: what the options make of themselves untouched is what the library holds.
TEST(TrainOptions, DefaultsAreTheLibrarysOwn) {
  TrainOptions t;
  const SgdConfig sgd = t.sgd(), s;
  EXPECT_EQ(sgd.momentum, s.momentum);
  EXPECT_EQ(sgd.nesterov, s.nesterov);
  EXPECT_EQ(sgd.weight_decay, s.weight_decay);
  EXPECT_EQ(sgd.decay_bn_and_bias, s.decay_bn_and_bias);
  EXPECT_EQ(sgd.optimizer, s.optimizer);
  EXPECT_EQ(sgd.lars_eta, s.lars_eta);
  t.resolve_defaults(100);
  const LrSchedule lr = t.schedule(256, 100), l;
  EXPECT_EQ(lr.kind, l.kind);
  EXPECT_EQ(lr.warmup_start_factor, l.warmup_start_factor);
  EXPECT_EQ(lr.gamma, l.gamma);
  EXPECT_EQ(lr.min_lr, l.min_lr);
  EXPECT_EQ(lr.milestones, l.milestones);
  BackendConfig bc;
  bc.conv_algorithm = parse_conv_algorithm("exhaustive");  // apply() must set each field
  bc.workspace_limit = 1;
  bc.bucket_bytes = 1;
  bc.precision = Precision::bf16;
  bc.layout = ComputeLayout::nhwc;
  bc.graph = bc.sync_bn = true;
  bc.device = 3;
  bc.fusions = 0;
  t.apply(bc);
  const BackendConfig b;
  EXPECT_EQ(bc.conv_algorithm, b.conv_algorithm);
  EXPECT_EQ(bc.workspace_limit, b.workspace_limit);
  EXPECT_EQ(bc.bucket_bytes, b.bucket_bytes);
  EXPECT_EQ(bc.precision, b.precision);
  EXPECT_EQ(bc.layout, b.layout);
  EXPECT_EQ(bc.graph, b.graph);
  EXPECT_EQ(bc.sync_bn, b.sync_bn);
  EXPECT_EQ(bc.device, b.device);
  EXPECT_EQ(bc.fusions, b.fusions);
  EXPECT_EQ(t.threads, b.threads);
  EXPECT_EQ(t.label_smoothing, b.label_smoothing);
  // Read as the decimal the float stands for: help, JSON and checkpoints show 0.9, not
  // 0.8999999761581421 (what a checkpoint stored before the defaults were read).
  const nlohmann::json j = stored_defaults();
  EXPECT_EQ(j.at("momentum"), 0.9);
  EXPECT_EQ(j.at("weight_decay"), 1e-4);
  EXPECT_EQ(j.at("lars_eta"), 0.001);
  EXPECT_EQ(j.at("warmup_start_factor"), 0.1);
  EXPECT_EQ(j.at("gamma"), 0.1);
  EXPECT_EQ(j.at("conv_algo"), "heuristic");
  EXPECT_EQ(j.at("fusions"), "bn_relu,bn_add_relu");
  EXPECT_EQ(decimal_of(0.9f), 0.9);
  EXPECT_EQ(float(decimal_of(1e-4f)), 1e-4f);
}

// ImageNet's normalisation is one constant (augment/imagenet.h): the loader's f32 output, a
// backend's u8 input and --mean/--std's default all take it.
TEST(TrainOptions, OneImagenetNormalisation) {
  EXPECT_EQ(OutputSpec{}.mean, kImagenetMean);
  EXPECT_EQ(OutputSpec{}.std, kImagenetStd);
  EXPECT_EQ(InputSpec{}.mean, kImagenetMean);
  EXPECT_EQ(InputSpec{}.std, kImagenetStd);
  Parsed p({});
  EXPECT_EQ(p.app.get_option("--mean")->get_default_str(), "0.485,0.456,0.406");
  EXPECT_EQ(p.app.get_option("--std")->get_default_str(), "0.229,0.224,0.225");
  Parsed given({"--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225"});
  EXPECT_EQ(given.json(), p.json());
}

// The convolution algorithm's one parser (train/conv_algorithm.h): the backends, --conv-algo and
// a checkpoint's stored word all read it; each word is its canonical name again.
TEST(ConvAlgorithm, OneParserForEveryWord) {
  using K = ConvAlgorithm::Kind;
  EXPECT_EQ(parse_conv_algorithm("heuristic"), ConvAlgorithm{});
  EXPECT_EQ(parse_conv_algorithm("exhaustive").kind, K::exhaustive);
  EXPECT_EQ(parse_conv_algorithm("fixed:implicit_gemm"),
            (ConvAlgorithm{K::fixed, "implicit_gemm"}));
  const std::map<std::string, std::string> older = {
      {"auto", "heuristic"}, {"direct", "fixed:direct"}, {"winograd", "fixed:winograd"}};
  for (const auto& [word, canonical] : older)
    EXPECT_EQ(conv_algorithm_name(parse_conv_algorithm(word)), canonical) << word;
  for (const char* word : {"heuristic", "exhaustive", "fixed:direct", "fixed:0"})
    EXPECT_EQ(conv_algorithm_name(parse_conv_algorithm(word)), word);
  EXPECT_EQ(fmt::format("{}", parse_conv_algorithm("winograd")), "fixed:winograd");
  for (const char* bad : {"fastest", "fixed:", "", "Heuristic", "fixed"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(parse_conv_algorithm(bad), Error);
    EXPECT_THROW(Parsed({"--conv-algo", bad}), CLI::ParseError);
  }
}

TEST(TrainOptions, EveryStoredOptionHasASample) {
  for (const auto& [flag, key] : stored_flags())
    EXPECT_TRUE(samples().count(flag)) << flag << " (" << key << ") has no sample value here";
}

TEST(TrainOptions, EachSampleDiffersFromTheDefault) {
  const nlohmann::json d = stored_defaults();
  for (const auto& [flag, args] : samples()) {
    const nlohmann::json given = Parsed(args).json();
    EXPECT_NE(given, d) << flag << ": the sample is the default, so it tests nothing";
  }
}

// A checkpoint that lacks an option's key was written before the option existed, so it ran
// with the default: resumed without the option it gets the default; given the default, it
// resumes; given another value, it is refused as any contradiction is.
TEST(TrainOptions, AbsentKeyIsTheDefaultForEveryOption) {
  for (const auto& [flag, key] : stored_flags()) {
    SCOPED_TRACE(flag);
    nlohmann::json older = stored_defaults();
    older.erase(key);
    if (key == "batch") older.erase("global_batch");

    Parsed plain({});
    plain.resume(older);
    EXPECT_EQ(plain.json(), stored_defaults());

    Parsed changed(samples().at(flag));
    if (given_wins_on_resume(flag)) {
      changed.resume(older);
      EXPECT_EQ(changed.json().at(key), Parsed(samples().at(flag)).json().at(key));
    } else {
      try {
        changed.resume(older);
        ADD_FAILURE() << "resumed an older checkpoint with " << flag << " changed";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(flag), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("ck.safetensors"), std::string::npos) << e.what();
      }
    }
  }
}

// Given explicitly with the stored value, every option resumes.
TEST(TrainOptions, SameValueGivenResumes) {
  for (const auto& [flag, args] : samples()) {
    SCOPED_TRACE(flag);
    const nlohmann::json stored = Parsed(args).json();
    Parsed again(args);
    again.resume(stored);
    EXPECT_EQ(again.json(), stored);
  }
}

// The stored run wins over the defaults of a resume that gives nothing, for every option.
TEST(TrainOptions, ResumeWithoutOptionsTakesTheStoredOnes) {
  for (const auto& [flag, args] : samples()) {
    SCOPED_TRACE(flag);
    const nlohmann::json stored = Parsed(args).json();
    Parsed plain({});
    plain.resume(stored);
    EXPECT_EQ(plain.json(), stored);
  }
}

// A stored run with defaults, resumed with another value: refused for every kept option.
TEST(TrainOptions, DifferentValueOnResumeIsRefusedForEveryKeptOption) {
  const nlohmann::json stored = stored_defaults();
  for (const auto& [flag, args] : samples()) {
    SCOPED_TRACE(flag);
    Parsed changed(args);
    if (given_wins_on_resume(flag)) {
      changed.resume(stored);
      EXPECT_EQ(changed.json(), Parsed(args).json());
      continue;
    }
    EXPECT_THROW(changed.resume(stored), Error);
  }
}

// Older checkpoints' words for --conv-algo are the canonical ones.
TEST(TrainOptions, OlderConvAlgoWordsResumeAsCanonical) {
  nlohmann::json older = stored_defaults();
  older["conv_algo"] = "direct";
  Parsed given({"--conv-algo", "fixed:direct"});
  given.resume(older);
  EXPECT_EQ(given.train.conv_algo, "fixed:direct");
}

// --transform's short and long names are one transform: a run started with one resumes with
// the other, and the checkpoint stores the long one.
TEST(TrainOptions, TransformShortAndLongNamesResumeAlike) {
  for (const auto& [given_name, stored_name] :
       std::vector<std::pair<std::string, std::string>>{{"random-resized-crop", "rrc"},
                                                        {"rrc", "random-resized-crop"},
                                                        {"center", "center-crop"}}) {
    SCOPED_TRACE(given_name);
    const nlohmann::json stored = Parsed({"--transform", stored_name}).json();
    EXPECT_EQ(stored["transform"], transform_name(parse_transform(stored_name)));
    Parsed given({"--transform", given_name});
    EXPECT_NO_THROW(given.resume(stored));
  }
  Parsed other({"--transform", "crop"});
  EXPECT_THROW(other.resume(Parsed({"--transform", "rrc"}).json()), Error);
}

// --backend gpu, the older name of cuda, is read as cuda: everything after the parse sees one
// name. An unknown backend is still refused.
TEST(TrainOptions, OlderBackendNameIsReadAsCuda) {
  EXPECT_EQ(Parsed({"--backend", "gpu"}).train.backend, "cuda");
  EXPECT_EQ(Parsed({"--backend", "cuda"}).train.backend, "cuda");
  EXPECT_EQ(Parsed({"--backend", "cpu"}).train.backend, "cpu");
  EXPECT_THROW(Parsed({"--backend", "tpu"}), CLI::ValidationError);
}

// Options no checkpoint stores stay each run's own.
TEST(TrainOptions, PerRunOptionsAreNotStored) {
  const nlohmann::json j = stored_defaults();
  for (const char* key : {"threads", "backend", "prefetch", "on_error", "bucket_mb"})
    EXPECT_FALSE(j.contains(key)) << key;
  Parsed p({"--threads", "3", "--prefetch", "5"});
  p.resume(j);
  EXPECT_EQ(p.train.threads, 3);
  EXPECT_EQ(p.loader.prefetch, 5u);
}

TEST(TrainOptions, UnreadableConfigNamesTheFile) {
  Parsed p({});
  try {
    restore_train_options(p.train, p.loader, "{\"lr\": \"fast\"}", "ck.safetensors", p.app);
    ADD_FAILURE() << "accepted a string lr";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ck.safetensors"), std::string::npos) << e.what();
  }
}

// bench and study report the loader options by the same keys a checkpoint stores them.
TEST(LoaderOptions, JsonHasEveryRowAndTheAugmentationOptions) {
  LoaderOptions o;
  o.jitter = "0.4,0.4,0.4,0.1";
  o.grayscale = 0.2;
  o.resize_filter = "antialias";
  const nlohmann::json j = loader_options_json(o);
  EXPECT_EQ(j.size(), loader_option_table().size());
  EXPECT_EQ(j.at("jitter"), "0.4,0.4,0.4,0.1");
  EXPECT_EQ(j.at("grayscale"), 0.2);
  EXPECT_EQ(j.at("resize_filter"), "antialias");
}

// Caps as a host backend and a device one declare them: the decode choice reads these, not the
// backend's name (which only goes into its messages).
const BackendCaps kHost{.activity_records = true};
const BackendCaps kDevice{.device = true, .asynchronous = true, .device_input = true};

// --decode auto decides by the stored images' size, not the output's: a 1024 px dataset
// trained at 224 px is where the CPU falls short (issue 41 item 5). With the CPU backend the
// reason is the backend, whatever the size; --decode gpu there says what to add.
TEST(DecodeChoice, AutoGoesByTheStoredImagesThenTheBackendSaysWhy) {
  test::TempDir d;
  GenConfig g;
  g.out = d / "data";
  g.sizes = {1024};
  g.classes = 1;
  g.per_class = 3;
  g.progress = false;
  const Index big = open_index(generate_dataset(g).roots.at(0));
  const int side = stored_image_side(big);
  EXPECT_GE(side, 1024);
  EXPECT_LE(side, 1200);
  LoaderConfig lc;
  lc.transform.size = 224;
  const DecodeChoice cuda = choose_decode(DecodeMode::automatic, lc, "cuda", kDevice, side);
  EXPECT_NE(cuda.reason.find(fmt::format("{} px stored images", side)), std::string::npos)
      << cuda.reason;
  EXPECT_EQ(cuda.reason.find("keeps up"), std::string::npos) << cuda.reason;
  EXPECT_EQ(cuda.device == DecodeDevice::gpu, gpu_decode_unavailable().empty()) << cuda.reason;
  const DecodeChoice small = choose_decode(DecodeMode::automatic, lc, "cuda", kDevice, 256);
  EXPECT_EQ(small.device, DecodeDevice::cpu);
  EXPECT_NE(small.reason.find("256 px stored images, where the CPU keeps up"), std::string::npos)
      << small.reason;
  const DecodeChoice cpu = choose_decode(DecodeMode::automatic, lc, "cpu", kHost, side);
  EXPECT_EQ(cpu.device, DecodeDevice::cpu);
  EXPECT_EQ(cpu.reason,
            "auto: the cpu backend trains on the CPU (GPU decode feeds --backend cuda)");
  EXPECT_EQ(choose_decode(DecodeMode::automatic, lc, "cuda", kDevice, 0).device, DecodeDevice::cpu);
  try {
    choose_decode(DecodeMode::gpu, lc, "cpu", kHost, side);
    FAIL() << "--decode gpu on the cpu backend was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("add --backend cuda"), std::string::npos) << e.what();
  }
}

// GPU decode goes by the backend's caps: a device backend without a device input stage is
// refused, saying so, whatever its name; one with it is accepted under any name; and the
// built backends' own caps are what train passes (backend_caps).
TEST(DecodeChoice, GoesByTheBackendsCapsNotItsName) {
  LoaderConfig lc;
  lc.transform.size = 224;
  const BackendCaps no_input{.device = true, .asynchronous = true};
  try {
    choose_decode(DecodeMode::gpu, lc, "cuda", no_input, 1024);
    FAIL() << "--decode gpu on a backend without a device input stage was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("the cuda backend takes no batches from the device"),
              std::string::npos)
        << e.what();
  }
  const DecodeChoice refused = choose_decode(DecodeMode::automatic, lc, "cuda", no_input, 1024);
  EXPECT_EQ(refused.device, DecodeDevice::cpu);
  EXPECT_NE(refused.reason.find("takes no batches from the device"), std::string::npos)
      << refused.reason;
  // Named cpu, declaring a device input: the choice goes on to the images' size.
  const DecodeChoice named_cpu = choose_decode(DecodeMode::automatic, lc, "cpu", kDevice, 256);
  EXPECT_NE(named_cpu.reason.find("256 px stored images, where the CPU keeps up"),
            std::string::npos)
      << named_cpu.reason;
  for (const std::string& name : built_backends()) {
    const DecodeChoice c = choose_decode(DecodeMode::automatic, lc, name, backend_caps(name), 256);
    const bool refused_for_the_backend =
        c.reason.find("the " + name + " backend") != std::string::npos;
    EXPECT_EQ(refused_for_the_backend, !backend_caps(name).device_input) << c.reason;
  }
}

}  // namespace
}  // namespace stoker
