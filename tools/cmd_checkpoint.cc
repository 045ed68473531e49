// SPDX-License-Identifier: Apache-2.0
// stoker checkpoint init ARCH OUT: writes a model's initial state (models/init.h) as a
// checkpoint; stoker checkpoint info FILE: lists a safetensors file's metadata and tensors and,
// with --check ARCH, verifies it holds that network's state_dict. It trains nothing.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/error.h"
#include "models/resnet.h"
#include "tools/commands.h"
#include "tools/options/option_checks.h"
#include "tools/output_check.h"
#include "train/checkpoint.h"

namespace stoker {

namespace {

struct CheckpointOptions {
  std::string arch;
  std::string path;
  int classes = 1000;
  int check_classes = 0;  // info --check: 0 reads them from the file's fc.bias
  uint64_t seed = 0;
  bool zero_init_residual = false;
  bool momentum = false;
  bool sums = false;
};

Network build(const CheckpointOptions& o) {
  ResNetConfig config = parse_resnet_arch(o.arch);
  config.num_classes = o.classes;
  config.zero_init_residual = o.zero_init_residual;
  return build_resnet(config);
}

void run_init(const CheckpointOptions& o) {
  check_writable("out", o.path);
  const Network net = build(o);
  Checkpoint ckpt = init_checkpoint(net, o.seed);
  if (o.momentum) add_zero_momentum(ckpt, net);
  RunState state;
  state.seed = o.seed;
  state.config = nlohmann::json{
      {"arch", net.name},
      {"classes", net.num_classes},
      {"zero_init_residual", o.zero_init_residual},
      {"seed",
       o.seed}}.dump();
  set_run_state(ckpt, state);
  save_checkpoint(o.path, ckpt);
  fmt::print("{}: {} tensors ({} {} with {} classes, seed {})\n", o.path, ckpt.tensors.size(),
             net.params.size(), net.name, net.num_classes, o.seed);
}

// The sum of a tensor's values in double, so a reader can compare contents, not just shapes.
double value_sum(const Tensor& t) {
  double sum = 0;
  if (t.dtype == TensorDType::f32) {
    std::vector<float> v(t.bytes.size() / sizeof(float));
    copy_values(t, std::span<float>(v));
    for (const float x : v) sum += x;
  } else if (t.dtype == TensorDType::i64) {
    std::vector<int64_t> v(t.bytes.size() / sizeof(int64_t));
    copy_values(t, std::span<int64_t>(v));
    for (const int64_t x : v) sum += static_cast<double>(x);
  }
  return sum;
}

void run_info(const CheckpointOptions& o) {
  const Checkpoint ckpt = load_checkpoint(o.path);
  CheckpointOptions c = o;
  c.classes = o.check_classes;
  if (c.classes == 0) {  // the file's own class count, so that --check checks the rest
    const Tensor* fc = find_tensor(ckpt, "fc.bias");
    c.classes =
        fc != nullptr && fc->shape.size() == 1 && fc->shape[0] > 0 ? int(fc->shape[0]) : 1000;
  }
  if (!o.arch.empty()) check_checkpoint(ckpt, build(c), o.path);
  fmt::print("# {}: {} tensors, {} metadata entries\n", o.path, ckpt.tensors.size(),
             ckpt.metadata.size());
  for (const auto& [key, value] : ckpt.metadata) fmt::print("# {} = {}\n", key, value);
  for (const Tensor& t : ckpt.tensors) {
    fmt::print("{} {} [{}]", t.name, dtype_name(t.dtype), fmt::join(t.shape, ","));
    if (o.sums) {
      const bool summable = t.dtype == TensorDType::f32 || t.dtype == TensorDType::i64;
      if (summable) fmt::print(" {:.17g}", value_sum(t));
      if (!summable) fmt::print(" -");
    }
    fmt::print("\n");
  }
  if (!o.arch.empty()) {
    fmt::print("# matches {} with {} classes\n", o.arch, c.classes);
  }
}

}  // namespace

void add_checkpoint_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "checkpoint", "Write a model's initial checkpoint, or inspect and check a safetensors file");
  cmd->require_subcommand(1);
  auto o = std::make_shared<CheckpointOptions>();

  auto* init = cmd->add_subcommand(
      "init", "Write ARCH's initial parameters and buffers (state_dict keys) to OUT, atomically");
  init->add_option("arch", o->arch, "resnet18, resnet34, resnet50, resnet101 or resnet152")
      ->required()
      ->check(parsed_by([](const std::string& s) { parse_resnet_arch(s); }, "ARCH"));
  init->add_option("out", o->path, "The checkpoint to write (safetensors)")->required();
  init->add_option("--classes", o->classes, "Number of classes")
      ->capture_default_str()
      ->check(integer_in(1, 1 << 20));
  init->add_option("--seed", o->seed, "Initialisation seed")
      ->capture_default_str()
      ->check(integer_in(0));
  init->add_flag("--zero-init-residual", o->zero_init_residual,
                 "Last BN of each residual branch starts with weight 0");
  init->add_flag("--momentum", o->momentum,
                 "Also write zero SGD momentum buffers (optim.momentum.<key>)");
  init->callback([o] { run_init(*o); });

  auto* info = cmd->add_subcommand(
      "info",
      "List a safetensors file's metadata ('# key = value') and tensors "
      "('name DTYPE [dim0,dim1,...]', [] for a scalar), validating the whole file");
  info->add_option("file", o->path, "A safetensors file")->required();
  info->add_option("--check", o->arch,
                   "Fail (exit 1) unless the file holds exactly this network's state_dict, "
                   "naming each missing, extra or mis-shaped key (optim.momentum.* allowed)")
      ->check(parsed_by([](const std::string& s) { parse_resnet_arch(s); }, "ARCH"));
  info->add_option("--classes", o->check_classes,
                   "Number of classes for --check (default: the file's, from fc.bias)")
      ->check(integer_in(1, 1 << 20));
  info->add_flag("--sums", o->sums, "Append the sum of each F32/I64 tensor's values");
  info->callback([o] { run_info(*o); });
}

}  // namespace stoker
