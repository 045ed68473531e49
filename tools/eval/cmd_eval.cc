// SPDX-License-Identifier: Apache-2.0
// stoker eval: top-1 / top-5 accuracy and mean cross-entropy of a checkpoint on a validation
// folder, with the evaluation transform (resize, centre crop, no flip) in index order. The
// last batch may be short: the network is planned for one batch size, so the rest of the
// batch buffer is computed and ignored (eval-mode batch norm treats images independently).
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/interrupt.h"
#include "common/system_info.h"
#include "loader/index/index.h"
#include "loader/iterator.h"
#include "loader/sampler/size_schedule.h"
#include "models/resnet.h"
#include "tools/commands.h"
#include "tools/json_document.h"
#include "tools/options/command_options.h"
#include "tools/options/loader_options.h"
#include "tools/options/option_checks.h"
#include "tools/output_check.h"
#include "tools/setup/class_names.h"
#include "tools/setup/evaluate.h"
#include "tools/setup/train_options.h"
#include "tools/setup/trainer.h"
#include "train/backend.h"
#include "train/checkpoint.h"

namespace stoker {
namespace {

struct EvalCommand {
  std::string data, checkpoint, arch, json;
  int classes = 0;
  TrainOptions compute;  // its backend options (add_backend_options), arch and classes
  LoaderOptions loader;
};

// The size a Stoker checkpoint was trained at, into `l` unless --size was given; what the
// input line says it came from. A --size-schedule run is evaluated at the schedule's largest
// size, as its own --val was (evaluation_loader): its "size" is the unused default.
std::string checkpoint_size(const nlohmann::json& cfg, const std::string& path, LoaderOptions& l,
                            const CLI::App& app) {
  if (app.count("--size") > 0) return "--size";
  if (!cfg.is_object()) return "default";
  if (cfg.contains("size_schedule") && cfg["size_schedule"].is_string() &&
      !cfg["size_schedule"].get<std::string>().empty()) {
    const std::string text = cfg["size_schedule"].get<std::string>();
    try {
      l.size = parse_size_schedule(text, "size_schedule").max;
    } catch (const UsageError& e) {  // the file's fault, not the command line's
      fail("eval: {}: {}", path, e.what());
    }
    l.height = 0;
    return fmt::format("the checkpoint's --size-schedule {}, its largest", text);
  }
  if (cfg.contains("size") && cfg["size"].is_number_integer()) {
    l.size = cfg["size"].get<int>();
    l.height = cfg.value("height", 0);
    return "the checkpoint's";
  }
  return "default";
}

void run_eval(EvalCommand& o, const CLI::App& app) {
  install_interrupt_handlers();
  check_writable("--json", o.json);
  const Checkpoint ckpt = load_checkpoint(o.checkpoint);
  std::string arch = o.arch;
  int classes = o.classes;
  // A Stoker checkpoint says what it is, and the image size it was trained at (evaluated
  // at unless --size says otherwise); a converted torchvision one needs --arch.
  std::string size_from = app.count("--size") > 0 ? "--size" : "default";
  if (const auto it = ckpt.metadata.find("config"); it != ckpt.metadata.end()) {
    const nlohmann::json cfg = nlohmann::json::parse(it->second, nullptr, false);
    if (arch.empty() && cfg.is_object() && cfg.contains("arch")) arch = cfg["arch"];
    size_from = checkpoint_size(cfg, o.checkpoint, o.loader, app);
    // A run trained with its own normalisation is evaluated with it.
    for (const auto& [key, field] : {std::pair{"mean", &o.loader.mean}, {"std", &o.loader.std}}) {
      if (app.count(fmt::format("--{}", key)) == 0 && cfg.is_object() && cfg.contains(key))
        *field = cfg[key].get<std::array<float, 3>>();
    }
  }
  if (arch.empty()) fail("eval: {} does not name its architecture; give --arch", o.checkpoint);
  if (classes == 0) {
    const Tensor* fc = find_tensor(ckpt, "fc.bias");
    if (fc == nullptr || fc->shape.size() != 1)
      fail("eval: {} has no fc.bias to count classes from; give --classes", o.checkpoint);
    classes = int(fc->shape[0]);
  }
  o.compute.arch = arch;
  o.compute.classes = classes;
  const Network net = trainer_network(o.compute);

  const Index index = open_index(o.data);
  warn_empty_classes(index.empty_classes, o.data);
  if (const auto names = stored_class_names(ckpt, o.checkpoint))
    check_class_names("eval", *names, o.checkpoint, index.classes, o.data);
  if (int(index.classes.size()) > classes)
    fail("eval: {} has {} classes but {} has {} outputs", o.data, index.classes.size(),
         o.checkpoint, classes);
  const LoaderConfig lc = evaluation_loader(o.loader, "eval");
  const BackendConfig bc = trainer_backend_config(o.compute, lc, int64_t(o.loader.batch));
  std::unique_ptr<Backend> backend =
      trainer_backend(o.compute, net, bc, &ckpt, o.checkpoint, lc.sampler.seed);

  const EvalResult r =
      evaluate(*backend, index, lc, classes, bc.batch, fmt::format("eval {}", net.name));
  if (r.images == 0 && !r.interrupted) fail("eval: {} yielded no image", o.data);
  const int64_t seen = r.images;
  fmt::print("# stoker eval: {} on {} ({} images, {} classes), {}\n", o.checkpoint, o.data, seen,
             index.classes.size(), backend->describe());
  fmt::print("# input: {}x{} centre crop of a {} resize ({} size)\n", o.loader.out_width(),
             o.loader.out_height(), lc.transform.resize, size_from);
  fmt::print("{:>8} {:>8} {:>8} {:>9} {:>8}\n", "images", "top-1 %", "top-5 %", "loss", "skipped");
  fmt::print("{:>8} {:>8.2f} {:>8.2f} {:>9.4f} {:>8}\n", seen, 100 * r.top1, 100 * r.top5, r.loss,
             r.skipped);
  if (r.interrupted)
    fmt::print("# interrupted: the figures cover the first {} of {} images\n", seen, index.size());
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    const nlohmann::json doc = {{"tool", "stoker eval"},
                                {"version", STOKER_VERSION},
                                {"checkpoint", o.checkpoint},
                                {"data", o.data},
                                {"arch", net.name},
                                {"image_size", o.loader.size},
                                {"backend", backend->describe()},
                                {"images", seen},
                                {"top1", r.top1},
                                {"top5", r.top5},
                                {"loss", r.loss},
                                {"skipped", r.skipped},
                                {"interrupted", r.interrupted}};
    out << context_and_result(
               doc, {"tool", "version", "checkpoint", "data", "arch", "image_size", "backend"})
               .dump(2)
        << "\n";
    if (!out) fail("eval: cannot write {}", o.json);
  }
  std::fflush(stdout);
  if (r.interrupted) throw Interrupted(fmt::format("eval: interrupted after {} images", seen));
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto o = std::make_shared<EvalCommand>();
  o->loader.batch = 32;
  CLI::App* cmd = app.add_subcommand("eval", "Top-1/top-5 of a checkpoint on a validation folder");
  cmd->add_option("data", o->data,
                  "Validation set: ImageFolder root, list file, packed shards or nfs:// URL")
      ->required();
  cmd->add_option("--checkpoint", o->checkpoint, "Model to evaluate (safetensors)")->required();
  cmd->add_option("--arch", o->arch, "Architecture (default: the checkpoint's)")
      ->check(parsed_by([](const std::string& s) { parse_resnet_arch(s); }, "ARCH"));
  cmd->add_option("--classes", o->classes, "Output classes (default: from fc.bias)")
      ->check(integer_in(1, 1 << 20));
  o->compute.add_backend_options(*cmd);
  add_command_option(*cmd, "--json", o->json, {"Write the result here"});
  // Evaluation is the centre crop in index order, every image once: no augmentation,
  // shuffling, dropped batch or read-only mode to choose.
  add_trainer_loader_options(
      *cmd, o->loader,
      {"--transform", "--flip", "--jitter", "--grayscale", "--seed", "--no-shuffle", "--drop-last",
       "--no-decode", "--shard-order", "--shuffle-buffer", "--size-schedule", "--auto-window"});
  cmd->callback([o, cmd] { run_eval(*o, *cmd); });
}

}  // namespace stoker
