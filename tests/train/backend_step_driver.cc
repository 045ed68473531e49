// SPDX-License-Identifier: Apache-2.0
// Driver for backend_vs_torch.py: several SGD steps of a training backend on given batches,
// recording what torch is compared on (see the script for the file contract).
// Usage: backend_step_driver BACKEND ARCH CLASSES CHECKPOINT BATCHES OUT STEPS LR MOMENTUM
//        WEIGHT_DECAY NESTEROV LABEL_SMOOTHING [CONV_ALGORITHM]
// CONV_ALGORITHM is BackendConfig::conv_algorithm (default heuristic); after the summary line
// it prints one line "conv LAYER PASS ALGORITHM" per convolution pass, as the backend ran it.
#include <fmt/format.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/error.h"
#include "models/resnet.h"
#include "train/backend.h"
#include "train/checkpoint.h"

namespace {

const stoker::Tensor& need(const stoker::Checkpoint& f, const std::string& name,
                           const std::string& path) {
  const stoker::Tensor* t = stoker::find_tensor(f, name);
  if (t == nullptr) stoker::fail("{}: no tensor '{}'", path, name);
  return *t;
}

void append(stoker::Checkpoint& out, const stoker::Checkpoint& in, const std::string& prefix) {
  for (const stoker::Tensor& t : in.tensors) {
    stoker::Tensor c = t;
    c.name = prefix + t.name;
    out.tensors.push_back(std::move(c));
  }
}

int run(int argc, char** argv) {
  if (argc != 13 && argc != 14) {
    fmt::print(stderr,
               "usage: {} BACKEND ARCH CLASSES CHECKPOINT BATCHES OUT STEPS LR MOMENTUM "
               "WEIGHT_DECAY NESTEROV LABEL_SMOOTHING [CONV_ALGORITHM]\n",
               argv[0]);
    return 2;
  }
  const std::string backend_name = argv[1], ckpt_path = argv[4], batches_path = argv[5],
                    out_path = argv[6];
  stoker::ResNetConfig config = stoker::parse_resnet_arch(argv[2]);
  config.num_classes = std::stoi(argv[3]);
  const int steps = std::stoi(argv[7]);
  const float lr = std::stof(argv[8]);
  stoker::SgdConfig sgd;
  sgd.momentum = std::stof(argv[9]);
  sgd.weight_decay = std::stof(argv[10]);
  sgd.nesterov = std::stoi(argv[11]) != 0;
  sgd.decay_bn_and_bias = true;  // torch.optim.SGD's own behaviour
  const stoker::Network net = stoker::build_resnet(config);
  const stoker::Checkpoint batches = stoker::load_checkpoint(batches_path);

  const stoker::Tensor& first = need(batches, "images.0", batches_path);
  if (first.dtype != stoker::TensorDType::f32 || first.shape.size() != 4)
    stoker::fail("{}: images.0 must be F32 N x 3 x H x W", batches_path);
  stoker::BackendConfig bc;
  bc.batch = first.shape[0];
  bc.height = first.shape[2];
  bc.width = first.shape[3];
  bc.label_smoothing = std::stof(argv[12]);
  if (argc == 14) bc.conv_algorithm = stoker::parse_conv_algorithm(argv[13]);
  auto backend = stoker::make_backend(backend_name, net, bc);
  backend->load(stoker::load_checkpoint(ckpt_path), ckpt_path);

  stoker::Checkpoint out;
  std::vector<float> losses;
  std::vector<float> images(size_t(stoker::shape_numel(first.shape)));
  std::vector<int64_t> labels64(size_t(bc.batch));
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 0; k < steps; ++k) {
    stoker::copy_values(need(batches, fmt::format("images.{}", k), batches_path), images);
    stoker::copy_values(need(batches, fmt::format("labels.{}", k), batches_path), labels64);
    const std::vector<int32_t> labels(labels64.begin(), labels64.end());
    backend->stage({images.data(), labels.data(), bc.batch});
    backend->forward_backward();
    const std::vector<stoker::StepResult> results = backend->collect();
    if (results.size() != 1) stoker::fail("collect() gave {} results for 1 step", results.size());
    const float loss = results[0].loss;
    losses.push_back(loss);
    if (k == 0) {
      const std::span<const float> logits = backend->logits();
      out.tensors.push_back(
          stoker::make_f32_tensor("logits", {bc.batch, config.num_classes},
                                  std::vector<float>(logits.begin(), logits.end())));
      out.tensors.push_back(stoker::make_f32_tensor("loss", {1}, std::vector<float>{loss}));
      append(out, backend->gradients(), "grad.");
      for (const stoker::Tensor& t : backend->save().tensors) {
        const int i = stoker::param_index(net, t.name);
        if (i >= 0 && !net.params[size_t(i)].trainable) out.tensors.push_back(t);  // buffers
      }
      backend->forward_eval();  // on the batch staged above
      const std::span<const float> eval = backend->logits();
      out.tensors.push_back(stoker::make_f32_tensor("eval_logits", {bc.batch, config.num_classes},
                                                    std::vector<float>(eval.begin(), eval.end())));
    }
    backend->update(sgd, lr);
    backend->release_input();
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.tensors.push_back(stoker::make_f32_tensor("losses", {steps}, losses));
  append(out, backend->save(), "final.");
  stoker::save_checkpoint(out_path, out);
  fmt::print("{} {} {}x3x{}x{}: {} steps in {:.2f} s ({})\n", backend_name, net.name, bc.batch,
             bc.height, bc.width, steps, s, backend->describe());
  for (const stoker::ConvChoice& c : backend->diagnostics().algorithms()) {
    fmt::print("conv {} {} {}\n", c.layer, c.pass, c.algorithm);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
