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
#include "common/progress.h"
#include "common/system_info.h"
#include "loader/index.h"
#include "loader/iterator.h"
#include "models/resnet.h"
#include "tools/commands.h"
#include "tools/json_document.h"
#include "tools/loader_options.h"
#include "tools/option_checks.h"
#include "tools/train_options.h"
#include "train/backend.h"
#include "train/checkpoint.h"
#include "train/loader_feed.h"

namespace stoker {
namespace {

struct EvalCommand {
  std::string data, checkpoint, arch, reader, json;
  int classes = 0;
  TrainOptions compute;  // only its backend options (add_backend_options)
  LoaderOptions loader;
};

// Whether `label` is among the k largest logits (ties count against: a label must beat them).
bool in_top_k(const float* logits, int classes, int32_t label, int k) {
  int above = 0;
  for (int c = 0; c < classes; ++c)
    if (logits[c] > logits[label] || (logits[c] == logits[label] && c < label)) ++above;
  return above < k;
}

void run_eval(EvalCommand& o, const CLI::App& app) {
  const Checkpoint ckpt = load_checkpoint(o.checkpoint);
  std::string arch = o.arch;
  int classes = o.classes;
  // A Stoker checkpoint says what it is, and the image size it was trained at (evaluated
  // at unless --size says otherwise); a converted torchvision one needs --arch.
  const char* size_from = app.count("--size") > 0 ? "--size" : "default";
  if (const auto it = ckpt.metadata.find("config"); it != ckpt.metadata.end()) {
    const nlohmann::json cfg = nlohmann::json::parse(it->second, nullptr, false);
    if (arch.empty() && cfg.is_object() && cfg.contains("arch")) arch = cfg["arch"];
    if (app.count("--size") == 0 && cfg.is_object() && cfg.contains("size") &&
        cfg["size"].is_number_integer()) {
      o.loader.size = cfg["size"].get<int>();
      size_from = "the checkpoint's";
    }
  }
  if (arch.empty()) fail("eval: {} does not name its architecture; give --arch", o.checkpoint);
  if (classes == 0) {
    const Tensor* fc = find_tensor(ckpt, "fc.bias");
    if (fc == nullptr || fc->shape.size() != 1)
      fail("eval: {} has no fc.bias to count classes from; give --classes", o.checkpoint);
    classes = int(fc->shape[0]);
  }
  ResNetConfig rc = parse_resnet_arch(arch);
  rc.num_classes = classes;
  const Network net = build_resnet(rc);

  const Index index = open_index(o.data);
  if (int(index.classes.size()) > classes)
    fail("eval: {} has {} classes but {} has {} outputs", o.data, index.classes.size(),
         o.checkpoint, classes);
  o.loader.transform = "center";
  o.loader.no_shuffle = true;
  LoaderConfig lc = o.loader.to_config();
  lc.reader = parse_reader(o.reader.empty() ? fmt::format("threads:{}", online_cpus()) : o.reader);
  lc.sampler.drop_last = false;

  BackendConfig bc;
  bc.batch = int64_t(o.loader.batch);
  bc.height = bc.width = o.loader.size;
  bc.input.type = lc.output.dtype == DType::u8 ? InputType::u8 : InputType::f32;
  bc.input.nhwc = lc.output.layout == Layout::nhwc;
  bc.input.mean = lc.output.mean;
  bc.input.std = lc.output.std;
  bc.threads = o.compute.threads > 0 ? o.compute.threads : online_cpus();
  o.compute.apply(bc);
  std::unique_ptr<Backend> backend = make_backend(o.compute.backend, net, bc);
  backend->load(ckpt, o.checkpoint);

  lc.memory = loader_memory(backend->host_memory());
  Iterator it(index, lc);
  it.start_epoch(0);
  int64_t seen = 0, top1 = 0, top5 = 0;
  double loss = 0;
  Progress progress(fmt::format("eval {}", net.name), index.size(), "images");
  while (const Batch* b = it.next()) {
    // A short last batch still fills the planned batch: the pool's tensor has room for it,
    // and only its first b->size rows are read back.
    backend->stage({b->data, b->labels.data(), bc.batch});
    backend->forward_eval();
    const std::span<const float> logits = backend->logits();
    for (size_t i = 0; i < b->size; ++i) {
      const float* row = logits.data() + i * size_t(classes);
      const int32_t y = b->labels[i];
      top1 += in_top_k(row, classes, y, 1);
      top5 += in_top_k(row, classes, y, std::min(5, classes));
      double mx = row[0], sum = 0;
      for (int c = 1; c < classes; ++c) mx = std::max(mx, double(row[c]));
      for (int c = 0; c < classes; ++c) sum += std::exp(double(row[c]) - mx);
      loss += std::log(sum) + mx - double(row[y]);
    }
    seen += int64_t(b->size);
    progress.add(b->size);
  }
  progress.finish();
  if (seen == 0) fail("eval: {} yielded no image", o.data);
  const double n = double(seen);
  fmt::print("# stoker eval: {} on {} ({} images, {} classes), {}\n", o.checkpoint, o.data, seen,
             index.classes.size(), backend->describe());
  fmt::print("# input: {}x{} centre crop of a {} resize ({} size)\n", o.loader.size, o.loader.size,
             lc.transform.resize, size_from);
  fmt::print("{:>8} {:>8} {:>8} {:>9} {:>8}\n", "images", "top-1 %", "top-5 %", "loss", "skipped");
  fmt::print("{:>8} {:>8.2f} {:>8.2f} {:>9.4f} {:>8}\n", seen, 100 * top1 / n, 100 * top5 / n,
             loss / n, it.bad_samples().count());
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
                                {"top1", top1 / n},
                                {"top5", top5 / n},
                                {"loss", loss / n},
                                {"skipped", it.bad_samples().count()}};
    out << context_and_result(
               doc, {"tool", "version", "checkpoint", "data", "arch", "image_size", "backend"})
               .dump(2)
        << "\n";
    if (!out) fail("eval: cannot write {}", o.json);
  }
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto o = std::make_shared<EvalCommand>();
  o->loader.batch = 32;
  CLI::App* cmd = app.add_subcommand("eval", "Top-1/top-5 of a checkpoint on a validation folder");
  cmd->add_option("data", o->data, "Validation set: ImageFolder root or list file")->required();
  cmd->add_option("--checkpoint", o->checkpoint, "Model to evaluate (safetensors)")->required();
  cmd->add_option("--arch", o->arch, "Architecture (default: the checkpoint's)")
      ->check(parsed_by([](const std::string& s) { parse_resnet_arch(s); }, "ARCH"));
  cmd->add_option("--classes", o->classes, "Output classes (default: from fc.bias)")
      ->check(integer_in(1, 1 << 20));
  cmd->add_option("--reader", o->reader, "Reader policy (default threads:<cores>)")
      ->check(parsed_by([](const std::string& s) { parse_reader(s); }, "READER"));
  o->compute.add_backend_options(*cmd);
  cmd->add_option("--json", o->json, "Write the result here");
  // Evaluation is the centre crop in index order, every image once: no augmentation,
  // shuffling, dropped batch or read-only mode to choose.
  o->loader.add_to(*cmd, kAllLoaderOptions & ~(kTransform | kFlip | kSeed | kNoShuffle | kDropLast |
                                               kNoDecode | kShardOrder | kShuffleBuffer));
  cmd->callback([o, cmd] { run_eval(*o, *cmd); });
}

}  // namespace stoker
