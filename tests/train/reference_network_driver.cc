// SPDX-License-Identifier: Apache-2.0
// Driver for reference_network_vs_torchvision.py: loads a checkpoint and a batch (safetensors:
// "images" F32 N x 3 x H x W, "labels" I64 N), runs one training step's forward and backward
// and then the eval forward on the reference network, and writes what torch is compared on.
// Usage: reference_network_driver ARCH CLASSES CHECKPOINT BATCH OUT [LABEL_SMOOTHING]
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common/error.h"
#include "models/resnet.h"
#include "train/checkpoint.h"
#include "train/reference/network.h"

namespace {

const stoker::Tensor& need(const stoker::Checkpoint& f, std::string_view name,
                           const std::string& path) {
  const stoker::Tensor* t = stoker::find_tensor(f, name);
  if (t == nullptr) stoker::fail("{}: no tensor '{}'", path, name);
  return *t;
}

int run(int argc, char** argv) {
  if (argc < 6 || argc > 7) {
    fmt::print(stderr,
               "usage: {} ARCH CLASSES CHECKPOINT BATCH OUT [LABEL_SMOOTHING]\n"
               "  BATCH: safetensors with images (F32 N x 3 x H x W) and labels (I64 N)\n",
               argv[0]);
    return 2;
  }
  stoker::ResNetConfig config = stoker::parse_resnet_arch(argv[1]);
  config.num_classes = std::stoi(argv[2]);
  const std::string ckpt_path = argv[3], batch_path = argv[4], out_path = argv[5];
  const float smoothing = argc == 7 ? std::stof(argv[6]) : 0.1f;
  const stoker::Network net = stoker::build_resnet(config);

  const stoker::Checkpoint batch = stoker::load_checkpoint(batch_path);
  const stoker::Tensor& images_t = need(batch, "images", batch_path);
  const stoker::Tensor& labels_t = need(batch, "labels", batch_path);
  if (images_t.dtype != stoker::TensorDType::f32 || images_t.shape.size() != 4 ||
      labels_t.dtype != stoker::TensorDType::i64 || labels_t.shape.size() != 1 ||
      labels_t.shape[0] != images_t.shape[0]) {
    stoker::fail("{}: expected images F32 N x 3 x H x W and labels I64 N", batch_path);
  }
  const std::vector<int64_t>& shape = images_t.shape;
  std::vector<float> images(static_cast<size_t>(stoker::shape_numel(shape)));
  std::vector<int64_t> labels64(static_cast<size_t>(shape[0]));
  stoker::copy_values(images_t, images);
  stoker::copy_values(labels_t, labels64);
  const std::vector<int32_t> labels(labels64.begin(), labels64.end());

  stoker::ref::ReferenceNet r = stoker::ref::make_reference_net(net, shape[0], shape[2], shape[3]);
  stoker::ref::load_parameters(r, stoker::load_checkpoint(ckpt_path), ckpt_path);

  const auto t0 = std::chrono::steady_clock::now();
  const float loss = stoker::ref::forward_backward(r, images.data(), labels.data(), smoothing);
  const auto t1 = std::chrono::steady_clock::now();
  const std::vector<int64_t> logits_shape = {r.batch, config.num_classes};
  stoker::Checkpoint out;
  out.tensors.push_back(stoker::make_f32_tensor("logits", logits_shape, stoker::ref::logits(r)));
  out.tensors.push_back(stoker::make_f32_tensor("loss", {1}, std::vector<float>{loss}));
  for (size_t i = 0; i < net.params.size(); ++i) {
    const stoker::Param& p = net.params[i];
    if (p.trainable) {
      out.tensors.push_back(
          stoker::make_f32_tensor("grad." + p.name, p.shape, stoker::ref::gradient(r, p.name)));
    } else if (p.dtype == stoker::ParamType::f32) {  // running stats after the step
      out.tensors.push_back(
          stoker::make_f32_tensor(p.name, p.shape, stoker::ref::parameter(r, p.name)));
    } else {
      out.tensors.push_back(stoker::make_i64_tensor(p.name, p.shape, r.counts[i]));
    }
  }
  const auto t2 = std::chrono::steady_clock::now();
  out.tensors.push_back(stoker::make_f32_tensor("eval_logits", logits_shape,
                                                stoker::ref::forward_eval(r, images.data())));
  const auto t3 = std::chrono::steady_clock::now();
  stoker::save_checkpoint(out_path, out);
  const auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  fmt::print("{} {}x3x{}x{}: forward_backward {:.0f} ms, forward_eval {:.0f} ms\n", net.name,
             shape[0], shape[2], shape[3], ms(t1 - t0), ms(t3 - t2));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // stoker::Error, and std::stoi's on a bad CLASSES
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
