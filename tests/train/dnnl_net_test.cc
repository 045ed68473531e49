// SPDX-License-Identifier: Apache-2.0
// The CPU backend (oneDNN, train/cpu) against the reference network (train/reference), layer
// by layer: every layer's output in the training forward, every tensor's gradient and every
// parameter's gradient in the backward, the running statistics, the loss and the eval
// logits, on ResNet-18 and ResNet-50 at small inputs, images in NCHW and NHWC. Then the
// backend's own contract: steps reuse everything (same answer twice), SGD matches the
// reference SGD on the same gradients, save/load round trips in torch's layout, bad labels.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "models/normal.h"
#include "models/resnet.h"
#include "train/cpu/cpu_backend.h"
#include "train/reference/network.h"

namespace stoker::cpu {
namespace {

// Errors are max |diff| / max |reference| per tensor. fp32 sums of a few thousand terms,
// in different orders, against the reference's double accumulators: ~1e-6, and up to ~3e-5
// where batch norm sees few values per channel (ResNet-50 at 40 px). A wrong layout,
// tap or missing gradient contribution gives 1e-1 or more.
constexpr double kTol = 1e-4;

double error(std::span<const float> ref, std::span<const float> got) {
  EXPECT_EQ(ref.size(), got.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < std::min(ref.size(), got.size()); ++i) {
    diff = std::max(diff, std::abs(double(ref[i]) - double(got[i])));
    scale = std::max(scale, std::abs(double(ref[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

const Tensor& tensor(const Checkpoint& c, std::string_view name) {
  const Tensor* t = find_tensor(c, name);
  STOKER_CHECK_MSG(t != nullptr, "no tensor {}", name);
  return *t;
}

std::vector<float> values(const Tensor& t) {
  std::vector<float> v(size_t(shape_numel(t.shape)));
  copy_values(t, v);
  return v;
}

Network resnet(int depth, int classes) {
  ResNetConfig c;
  c.depth = depth;
  c.num_classes = classes;
  return build_resnet(c);
}

// Small last-BN weights in every residual branch: unit-BN ResNet-50 at small inputs is
// chaotic (gradients of 1e3 and more), which would test conditioning rather than layers.
Checkpoint tame_init(const Network& net, uint64_t seed) {
  Checkpoint c = init_checkpoint(net, seed);
  for (Tensor& t : c.tensors) {
    const bool last_bn =
        t.name.ends_with("bn3.weight") ||
        (net.name == "resnet18" && t.name.ends_with("bn2.weight") && t.name.starts_with("layer"));
    if (!last_bn) continue;
    std::vector<float> v = values(t);
    for (float& x : v) x = 0.2f;
    t = make_f32_tensor(t.name, t.shape, v);
  }
  return c;
}

std::vector<float> nchw_to_nhwc(const std::vector<float>& x, int64_t n, int64_t c, int64_t h,
                                int64_t w) {
  std::vector<float> y(x.size());
  for (int64_t a = 0; a < n; ++a)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t i = 0; i < h * w; ++i)
        y[size_t((a * h * w + i) * c + k)] = x[size_t((a * c + k) * h * w + i)];
  return y;
}

struct Case {
  int depth;
  int64_t batch, size;
  bool nhwc;
  const char* algo = "direct";
};

class DnnlVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(DnnlVsReference, EveryLayerForwardAndBackward) {
  const Case cs = GetParam();
  const Network net = resnet(cs.depth, 10);
  const Checkpoint init = tame_init(net, 11);
  BackendConfig config{.batch = cs.batch,
                       .height = cs.size,
                       .width = cs.size,
                       .nhwc = cs.nhwc,
                       .label_smoothing = 0.1f};
  std::unique_ptr<Backend> backend = make_cpu_backend(net, config);
  backend->load(init, "init");
  ref::ReferenceNet r = ref::make_reference_net(net, cs.batch, cs.size, cs.size);
  ref::load_parameters(r, init, "init");

  std::vector<float> images(size_t(cs.batch * 3 * cs.size * cs.size));
  Rng rng(7);
  fill_normal(rng, 1.0, images);
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < cs.batch; ++i) labels.push_back(int32_t((i * 7 + 3) % 10));
  const std::vector<float> given =
      cs.nhwc ? nchw_to_nhwc(images, cs.batch, 3, cs.size, cs.size) : images;

  const float ref_loss = ref::forward_backward(r, images.data(), labels.data(), 0.1f);
  const float loss = backend->forward_backward(given.data(), labels.data());
  EXPECT_NEAR(loss, ref_loss, 1e-5 * std::max(1.0f, std::abs(ref_loss)));

  DnnlNet& d = dnnl_net_of(*backend);
  double worst_act = 0, worst_dact = 0, worst_grad = 0;
  for (size_t t = 0; t < r.acts.size(); ++t) {
    // A batch norm fused with its ReLU has no separate output: the ReLU's is checked.
    if (!d.fused_relu[t]) {
      const double e = error(r.acts[t], read_activation(d, int(t), false));
      worst_act = std::max(worst_act, e);
      EXPECT_LT(e, kTol) << "activation " << net.tensors[t];
    }
    if (!d.grad_final[t]) continue;  // its memory now holds another tensor's gradient
    const double g = error(r.dacts[t], read_activation(d, int(t), true));
    worst_dact = std::max(worst_dact, g);
    EXPECT_LT(g, kTol) << "gradient of " << net.tensors[t];
  }
  const Checkpoint grads = backend->gradients();
  const Checkpoint state = backend->save();
  for (const Param& p : net.params) {
    if (p.trainable) {
      const double e = error(ref::gradient(r, p.name), values(tensor(grads, p.name)));
      worst_grad = std::max(worst_grad, e);
      EXPECT_LT(e, kTol) << "gradient of " << p.name;
    } else if (p.dtype == stoker::ParamType::f32) {
      EXPECT_LT(error(ref::parameter(r, p.name), values(tensor(state, p.name))), kTol) << p.name;
    } else {
      std::vector<int64_t> count(1);
      copy_values(tensor(state, p.name), count);
      EXPECT_EQ(count[0], 1) << p.name;
    }
  }
  backend->forward_eval(given.data());
  const std::vector<float> eval(backend->logits().begin(), backend->logits().end());
  const std::span<const float> ref_eval = ref::forward_eval(r, images.data());
  EXPECT_LT(error(ref_eval, eval), kTol) << "eval logits";
  fmt::print(
      "{} N{} {}x{} {}: worst error activations {:.2e}, their gradients {:.2e}, "
      "parameter gradients {:.2e}; {}\n",
      net.name, cs.batch, cs.size, cs.size, cs.nhwc ? "NHWC" : "NCHW", worst_act, worst_dact,
      worst_grad, backend->describe());
}

INSTANTIATE_TEST_SUITE_P(ResNets, DnnlVsReference,
                         ::testing::Values(Case{18, 4, 40, false}, Case{18, 2, 64, true},
                                           Case{50, 2, 40, false},
                                           Case{18, 2, 64, false, "winograd"}),
                         [](const auto& info) {
                           return fmt::format("resnet{}_n{}_{}px_{}_{}", info.param.depth,
                                              info.param.batch, info.param.size,
                                              info.param.nhwc ? "nhwc" : "nchw", info.param.algo);
                         });

class CpuBackendContract : public ::testing::Test {
 protected:
  void SetUp() override {
    backend->load(init, "init");
    Rng rng(3);
    fill_normal(rng, 1.0, images);
  }
  Network net = resnet(18, 4);
  Checkpoint init = init_checkpoint(net, 5);
  std::unique_ptr<Backend> backend =
      make_cpu_backend(net, {.batch = 2, .height = 32, .width = 32, .label_smoothing = 0.1f});
  std::vector<float> images = std::vector<float>(2 * 3 * 32 * 32);
  std::vector<int32_t> labels = {1, 3};
};

TEST_F(CpuBackendContract, StepsAreRepeatableAndWriteGradients) {
  const float loss = backend->forward_backward(images.data(), labels.data());
  const std::vector<float> g = values(tensor(backend->gradients(), "conv1.weight"));
  // Batch statistics make the second forward identical; gradients are written, not summed.
  EXPECT_EQ(backend->forward_backward(images.data(), labels.data()), loss);
  EXPECT_EQ(values(tensor(backend->gradients(), "conv1.weight")), g);
  const StepTimes& t = backend->last_times();
  EXPECT_GT(t.forward, 0);
  EXPECT_GT(t.backward, 0);
}

TEST_F(CpuBackendContract, UpdateIsTorchSgdOnTheGradients) {
  backend->forward_backward(images.data(), labels.data());
  const Checkpoint grads = backend->gradients();
  const SgdConfig sgd{.momentum = 0.9f, .weight_decay = 1e-4f, .decay_bn_and_bias = false};
  backend->update(sgd, 0.1f);
  const Checkpoint after = backend->save();
  // The same step on plain vectors with sgd_step, the function checked against torch.
  for (const Param& p : net.params) {
    if (!p.trainable) continue;
    std::vector<float> w = values(tensor(init, p.name));
    const std::vector<float> g = values(tensor(grads, p.name));
    std::vector<float> m(w.size());
    bool has = false;
    const SgdParam sp{w.data(), g.data(), m.data(), &has, w.size(), p.shape.size() == 1};
    sgd_step(sgd, 0.1f, std::span(&sp, 1));
    EXPECT_EQ(values(tensor(after, p.name)), w) << p.name;
    EXPECT_EQ(values(tensor(after, std::string(kMomentumPrefix) + p.name)), m) << p.name;
  }
}

TEST_F(CpuBackendContract, SaveLoadRoundTripsInTorchLayout) {
  const Checkpoint saved = backend->save();
  check_checkpoint(saved, net, "saved");  // torchvision's keys and shapes, no momentum yet
  for (const Tensor& t : init.tensors) {
    const Tensor& s = tensor(saved, t.name);
    EXPECT_EQ(s.bytes, t.bytes) << t.name;
  }
  backend->forward_backward(images.data(), labels.data());
  backend->update({}, 0.1f);
  const Checkpoint stepped = backend->save();
  std::unique_ptr<Backend> other =
      make_cpu_backend(net, {.batch = 2, .height = 32, .width = 32, .label_smoothing = 0.1f});
  other->load(stepped, "stepped");
  const Checkpoint again = other->save();
  ASSERT_EQ(again.tensors.size(), stepped.tensors.size());
  for (size_t i = 0; i < again.tensors.size(); ++i)
    EXPECT_EQ(again.tensors[i].bytes, stepped.tensors[i].bytes) << again.tensors[i].name;
}

TEST_F(CpuBackendContract, BadLabelsAndShapesAreErrors) {
  const std::vector<int32_t> bad = {1, 4};
  try {
    backend->forward_backward(images.data(), bad.data());
    FAIL() << "expected stoker::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("label 4"), std::string::npos) << e.what();
  }
  // 32 x 32 at batch 1: the last stage's batch norm sees one value per channel.
  EXPECT_THROW(make_cpu_backend(net, {.batch = 1, .height = 32, .width = 32}), Error);
  EXPECT_THROW(make_cpu_backend(net, {.batch = 0, .height = 32, .width = 32}), Error);
  EXPECT_THROW(backend->load(init_checkpoint(resnet(18, 10), 1), "other"), Error);
}

// bf16 activations and weights (f32 master weights, gradients and statistics) against the
// f32 reference. Without native bf16 the backend refuses bf16 unless STOKER_TEST_BF16 is set:
// then oneDNN emulates it (slowly) with AVX-512, which checks the bf16 plan on any machine.
TEST(CpuBackend, Bf16TracksTheF32Reference) {
  setenv("STOKER_TEST_BF16", "1", 1);
  const Network net = resnet(18, 10);
  const Checkpoint init = tame_init(net, 11);
  std::unique_ptr<Backend> backend = make_cpu_backend(net, {.batch = 4,
                                                            .height = 48,
                                                            .width = 48,
                                                            .precision = Precision::bf16,
                                                            .label_smoothing = 0.1f});
  unsetenv("STOKER_TEST_BF16");
  backend->load(init, "init");
  ref::ReferenceNet r = ref::make_reference_net(net, 4, 48, 48);
  ref::load_parameters(r, init, "init");
  std::vector<float> images(4 * 3 * 48 * 48);
  Rng rng(7);
  fill_normal(rng, 1.0, images);
  const std::vector<int32_t> labels = {3, 0, 7, 9};
  const float ref_loss = ref::forward_backward(r, images.data(), labels.data(), 0.1f);
  const float loss = backend->forward_backward(images.data(), labels.data());
  // bf16 keeps 8 bits of mantissa (relative rounding 4e-3 per value); after 20 layers the
  // outputs and gradients carry about 1e-2. A wrong layout or dtype gives O(1).
  EXPECT_NEAR(loss, ref_loss, 2e-2 * std::abs(ref_loss));
  EXPECT_LT(error(ref::logits(r), backend->logits()), 5e-2);
  // Gradients: batch norm's backward subtracts nearly equal terms, so bf16's rounding of the
  // incoming gradient shows up as 10-60% max-normalised error at this tiny batch; what must
  // hold is the direction: cosine similarity per tensor and over the whole gradient.
  const Checkpoint grads = backend->gradients();
  double worst = 1, dot = 0, n_ref = 0, n_got = 0;
  for (const Param& p : net.params) {
    if (!p.trainable) continue;
    const std::span<const float> a = ref::gradient(r, p.name);
    const std::vector<float> b = values(tensor(grads, p.name));
    double d = 0, na = 0, nb = 0;
    for (size_t k = 0; k < a.size(); ++k) {
      d += double(a[k]) * b[k];
      na += double(a[k]) * a[k];
      nb += double(b[k]) * b[k];
    }
    const double cosine = d / std::sqrt(na * nb + 1e-300);
    worst = std::min(worst, cosine);
    EXPECT_GT(cosine, 0.9) << "gradient of " << p.name;
    dot += d;
    n_ref += na;
    n_got += nb;
  }
  const double total = dot / std::sqrt(n_ref * n_got);
  EXPECT_GT(total, 0.95);  // measured 0.98; a layout or dtype mistake gives ~0
  fmt::print(
      "bf16 resnet18 N4 48x48: loss {} vs {}, gradient cosine {:.4f} (worst tensor {:.4f}); {}\n",
      loss, ref_loss, total, worst, backend->describe());
}

TEST(CpuBackend, Bf16IsRefusedWithoutNativeSupport) {
  if (cpu_has_native_bf16()) GTEST_SKIP() << "this CPU has native bf16";
  try {
    make_cpu_backend(resnet(18, 4),
                     {.batch = 2, .height = 32, .width = 32, .precision = Precision::bf16});
    FAIL() << "expected stoker::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bf16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stoker::cpu
