// SPDX-License-Identifier: Apache-2.0
// The GPU backend (train/gpu). Without a device (no driver, or none visible): asking for it is
// a one-line error naming the reason, and every device test skips saying so. With one: a
// ResNet-18 training step against the reference network (train/reference) layer by layer in
// f32 (NCHW and NHWC) and, within looser tolerances, in f16 and bf16; then the contract:
// the same bits on repeated steps, SGD as train/sgd.cc on the same gradients, save/load round
// trip (the f16 loss scale with it), u8 input, labels checked, NaN propagation and which
// precisions skip on it, stage time and the memory report, collect() and CUDA Graph replay,
// CUPTI records, algorithm choices.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "models/normal.h"
#include "models/resnet.h"
#include "tests/skip_policy.h"
#include "train/backend.h"
#include "train/gpu/cuda_backend.h"
#include "train/gpu/cudnn_net.h"
#include "train/gpu/cupti_records.h"
#include "train/gpu/gpu_policy.h"
#include "train/reference/network.h"

namespace stoker::gpu {
namespace {

#define SKIP_WITHOUT_DEVICE()                                    \
  do {                                                           \
    const std::string why = device_unavailable_reason(0);        \
    if (!why.empty()) STOKER_SKIP_HONEST("no-cuda-device", why); \
  } while (0)

double error(std::span<const float> ref, std::span<const float> got) {
  EXPECT_EQ(ref.size(), got.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < std::min(ref.size(), got.size()); ++i) {
    diff = std::max(diff, std::abs(double(ref[i]) - double(got[i])));
    scale = std::max(scale, std::abs(double(ref[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

std::vector<float> values(const Checkpoint& c, std::string_view name) {
  const Tensor* t = find_tensor(c, name);
  STOKER_CHECK_MSG(t != nullptr, "no tensor {}", name);
  std::vector<float> v(size_t(shape_numel(t->shape)));
  copy_values(*t, v);
  return v;
}

// Local names: the test does not depend on the loop's option parsing.
std::string_view precision_word(Precision p) {
  constexpr std::string_view kNames[] = {"f32", "tf32", "f16", "bf16"};
  return kNames[int(p)];
}
std::string_view layout_word(ComputeLayout l) {
  constexpr std::string_view kNames[] = {"auto", "nchw", "nhwc"};
  return kNames[int(l)];
}

Network resnet18(int classes) {
  ResNetConfig c;
  c.depth = 18;
  c.num_classes = classes;
  return build_resnet(c);
}

TEST(CudaWithoutDevice, CountIsZeroAndAskingIsAOneLineError) {
  if (cuda_device_count() > 0) STOKER_SKIP_HONEST("not-applicable", "a CUDA device is present");
  const std::string why = device_unavailable_reason(0);
  EXPECT_TRUE(why.starts_with("no CUDA device")) << why;
  const Network net = resnet18(4);
  const BackendConfig config{.batch = 2, .height = 32, .width = 32};
  for (auto make :
       {+[](const Network&n, const BackendConfig&c) { return make_backend("cuda", n, c); },
        +[](const Network&n, const BackendConfig&c) { return make_cuda_backend(n, c); }}) {
    try {
      make(net, config);
      ADD_FAILURE() << "made a CUDA backend without a device";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("no CUDA device"), std::string::npos) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  }
}

TEST(CudaBackendConfig, BadAlgorithmPolicyIsAnErrorBeforeDeviceWork) {
  SKIP_WITHOUT_DEVICE();
  const Network net = resnet18(4);
  EXPECT_THROW(make_backend("cuda", net,
                            {.batch = 2, .height = 32, .width = 32, .conv_algorithm = "fastest"}),
               Error);
}

struct Case {
  Precision precision;
  ComputeLayout layout;
  int64_t batch, size;
  double tol;  // max |diff| / max |reference| per tensor
};

// f32 without TF32: cuDNN's algorithms (FFT and Winograd included) against the reference's
// double accumulators, ~1e-5..1e-4. f16/bf16 carry 11/8 significant bits through ~20
// layers, and BN over few values amplifies: stated tolerances 5e-2 and 1.5e-1 on gradients.
class CudaVsReference : public ::testing::TestWithParam<Case> {};

TEST_P(CudaVsReference, OneTrainingStep) {
  SKIP_WITHOUT_DEVICE();
  const Case cs = GetParam();
  const Network net = resnet18(10);
  const Checkpoint init = init_checkpoint(net, 11);
  const BackendConfig config{.batch = cs.batch,
                             .height = cs.size,
                             .width = cs.size,
                             .layout = cs.layout,
                             .precision = cs.precision,
                             .label_smoothing = 0.1f};
  std::unique_ptr<Backend> backend = make_backend("cuda", net, config);
  backend->load(init, "init");
  ref::ReferenceNet r = ref::make_reference_net(net, cs.batch, cs.size, cs.size);
  ref::load_parameters(r, init, "init");

  std::vector<float> images(size_t(cs.batch * 3 * cs.size * cs.size));
  Rng rng(7);
  fill_normal(rng, 1.0, images);
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < cs.batch; ++i) labels.push_back(int32_t((i * 7 + 3) % 10));

  const float ref_loss = ref::forward_backward(r, images.data(), labels.data(), 0.1f);
  // f16 starts at a loss scale of 2^16, which may overflow in the first steps (as torch's
  // GradScaler, the step is then skipped and the scale halved): repeat with lr = 0 (weights
  // unchanged) until a step is clean. Running statistics then saw several batches.
  int attempts = 0;
  StepResult result;
  do {
    backend->stage({images.data(), labels.data(), cs.batch});
    backend->release_input();
    backend->forward_backward();
    backend->update({.momentum = 0.0f, .weight_decay = 0.0f}, 0.0f);
    const std::vector<StepResult> steps = backend->collect();
    ASSERT_EQ(steps.size(), 1u);
    result = steps[0];
  } while (result.skipped && ++attempts < 8);
  ASSERT_FALSE(result.skipped) << "f16 overflowed 8 times";
  if (cs.precision != Precision::f16) {
    EXPECT_EQ(attempts, 0);
  }
  const bool one_batch = attempts == 0;
  EXPECT_NEAR(result.loss, ref_loss, cs.tol * std::max(1.0f, std::abs(ref_loss)));

  CudnnNet& d = cudnn_net_of(*backend);
  double worst_act = 0, worst_dact = 0, worst_grad = 0;
  for (size_t t = 1; t < r.acts.size(); ++t) {
    if (!d.overwritten(int(t))) {
      const double e = error(r.acts[t], d.read_tensor(int(t), false));
      worst_act = std::max(worst_act, e);
      EXPECT_LT(e, cs.tol) << "activation " << net.tensors[t];
    }
    // Activation gradients are loss-scaled under f16: compared in f32 only.
    if (cs.precision != Precision::f32 || d.aliased(int(t))) continue;
    const double g = error(r.dacts[t], d.read_tensor(int(t), true));
    worst_dact = std::max(worst_dact, g);
    EXPECT_LT(g, cs.tol) << "gradient of " << net.tensors[t];
  }
  const Checkpoint grads = backend->gradients();
  const Checkpoint state = backend->save();
  for (const Param& p : net.params) {
    if (p.trainable) {
      const double e = error(ref::gradient(r, p.name), values(grads, p.name));
      worst_grad = std::max(worst_grad, e);
      EXPECT_LT(e, cs.tol) << "gradient of " << p.name;
    } else if (p.dtype == stoker::ParamType::f32 && one_batch) {
      EXPECT_LT(error(ref::parameter(r, p.name), values(state, p.name)), cs.tol) << p.name;
    }
  }
  if (one_batch) {
    backend->forward_eval();
    const std::vector<float> eval(backend->logits().begin(), backend->logits().end());
    EXPECT_LT(error(ref::forward_eval(r, images.data()), eval), cs.tol) << "eval logits";
  }
  fmt::print(
      "resnet18 N{} {}px {}: worst activation {:.2e}, activation gradient {:.2e}, parameter "
      "gradient {:.2e}; {}\n",
      cs.batch, cs.size, precision_word(cs.precision), worst_act, worst_dact, worst_grad,
      backend->describe());
}

INSTANTIATE_TEST_SUITE_P(
    ResNet18, CudaVsReference,
    ::testing::Values(Case{Precision::f32, ComputeLayout::nchw, 2, 32, 1e-3},
                      Case{Precision::f32, ComputeLayout::nhwc, 2, 32, 1e-3},
                      Case{Precision::f16, ComputeLayout::automatic, 4, 64, 5e-2},
                      Case{Precision::bf16, ComputeLayout::automatic, 4, 64, 1.5e-1}),
    [](const auto& info) {
      return fmt::format("{}_{}", precision_word(info.param.precision),
                         layout_word(info.param.layout));
    });

class CudaContract : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_DEVICE();
    Rng rng(3);
    fill_normal(rng, 1.0, images);
  }
  std::unique_ptr<Backend> make(BackendConfig c = {}) {
    c.batch = 2, c.height = 32, c.width = 32, c.label_smoothing = 0.1f;
    auto b = make_backend("cuda", net, c);
    b->load(init, "init");
    return b;
  }
  float step(Backend& b, bool update, float lr = 0.1f) {
    b.stage({images.data(), labels.data(), 2});
    b.release_input();
    b.forward_backward();
    if (update) b.update(sgd, lr);
    return b.collect().back().loss;
  }
  Network net = resnet18(4);
  Checkpoint init = init_checkpoint(net, 5);
  std::vector<float> images = std::vector<float>(2 * 3 * 32 * 32);
  std::vector<int32_t> labels = {1, 3};
  SgdConfig sgd{.momentum = 0.9f, .weight_decay = 1e-4f, .decay_bn_and_bias = false};
};

TEST_F(CudaContract, StepsAreRepeatableAndUpdateIsTorchSgd) {
  auto b = make();
  const float loss = step(*b, false);
  const Checkpoint g1 = b->gradients();
  // Batch statistics make the second step the same; gradients are written, not summed. The
  // same bits, as the conformance suite demands of every backend: deterministic convolution
  // algorithms first, and max pooling's backward ours (cuDNN's adds with atomics).
  EXPECT_EQ(step(*b, false), loss);
  const Checkpoint g2 = b->gradients();
  for (const Param& p : net.params) {
    if (p.trainable) {
      EXPECT_EQ(values(g1, p.name), values(g2, p.name)) << p.name;
    }
  }
  // update() on those gradients = train/sgd.cc on the host (first step: no momentum yet).
  const Checkpoint before = b->save();
  b->update(sgd, 0.1f);
  const std::vector<StepResult> r = b->collect();
  ASSERT_EQ(r.size(), 0u);  // the step was collected already; update() adds no new step
  const Checkpoint after = b->save();
  for (const Param& p : net.params) {
    if (!p.trainable) continue;
    std::vector<float> v = values(before, p.name), g = values(g2, p.name), m(v.size(), 0.0f);
    bool has = false;
    const SgdParam sp{v.data(), g.data(), m.data(), &has, v.size(), p.shape.size() == 1};
    sgd_step(sgd, 0.1f, std::span(&sp, 1));
    EXPECT_EQ(values(after, p.name), v) << p.name;
    EXPECT_EQ(values(after, std::string(kMomentumPrefix) + p.name), m) << p.name;
  }
}

TEST_F(CudaContract, SaveLoadRoundTripAndU8Input) {
  auto b = make();
  step(*b, true);
  const Checkpoint saved = b->save();
  auto c = make();
  c->load(saved, "saved");
  const float lb = step(*b, true), lc = step(*c, true);
  EXPECT_NEAR(lb, lc, 1e-5f * std::abs(lb));

  // u8 pixels normalised on the device = the same pixels normalised on the host.
  std::vector<uint8_t> pixels(images.size());
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = uint8_t((i * 37) % 256);
  std::vector<float> normalised(images.size());
  const InputSpec spec;
  for (size_t i = 0; i < pixels.size(); ++i) {
    const size_t ch = (i / (32 * 32)) % 3;
    normalised[i] = (float(pixels[i]) / 255.0f - spec.mean[ch]) * (1.0f / spec.std[ch]);
  }
  BackendConfig u8;
  u8.input.type = InputType::u8;
  auto x = make(u8), y = make();
  x->stage({pixels.data(), labels.data(), 2});
  x->forward_eval();
  const std::vector<float> lx(x->logits().begin(), x->logits().end());
  y->stage({normalised.data(), labels.data(), 2});
  y->forward_eval();
  EXPECT_LT(error(lx, y->logits()), 1e-5);
}

// Every precision: a NaN input reaches the loss through our ReLU (f32/TF32 and eval), the
// fused BN+ReLU (NHWC f16/bf16) and max pooling, as torch's do. f16 skips the step (its loss
// scale reads a non-finite gradient as an overflow); f32, TF32 and bf16 apply it, as torch and
// the CPU backend do, and the loop stops on the NaN loss.
TEST_F(CudaContract, NanInputPropagatesAndOnlyF16Skips) {
  std::vector<float> bad = images;
  bad[777] = std::nanf("");
  for (Precision p : {Precision::f32, Precision::tf32, Precision::f16, Precision::bf16}) {
    BackendConfig c;
    c.precision = p;
    std::unique_ptr<Backend> b;
    try {
      b = make(c);
    } catch (const Error& e) {
      // pre-Ampere: no tf32/bf16
      STOKER_SKIP_HONEST("not-applicable", precision_word(p) << ": " << e.what());
    }
    b->stage({bad.data(), labels.data(), 2});
    b->release_input();
    b->forward_backward();
    b->update(sgd, 0.1f);
    const std::vector<StepResult> r = b->collect();
    ASSERT_EQ(r.size(), 1u);
    EXPECT_TRUE(std::isnan(r[0].loss)) << precision_word(p) << " loss " << r[0].loss;
    EXPECT_EQ(r[0].skipped, p == Precision::f16) << precision_word(p);
    b->stage({bad.data(), labels.data(), 2});
    b->forward_eval();
    const std::span<const float> z = b->logits();
    EXPECT_TRUE(std::any_of(z.begin(), z.end(), [](float v) { return std::isnan(v); }))
        << precision_word(p) << " eval";
  }
}

// torch restores GradScaler's state with the checkpoint: so does load() under f16, and save()
// writes it (gpu_policy.h's "optim.grad_scaler").
TEST_F(CudaContract, F16LossScaleTravelsWithTheCheckpoint) {
  BackendConfig c;
  c.precision = Precision::f16;
  auto b = make(c);
  Checkpoint saved = b->save();
  ASSERT_EQ(read_grad_scaler(saved, "saved")->scale, LossScale::kInit);
  saved.metadata[std::string(kGradScalerKey)] =
      grad_scaler_metadata({.scale = 256.0f, .clean_steps = 5});
  auto d = make(c);
  d->load(saved, "saved");
  EXPECT_EQ(read_grad_scaler(d->save(), "again")->scale, 256.0f);
  const float loss = step(*d, true, 0.0f);
  ASSERT_TRUE(std::isfinite(loss));
  const std::optional<LossScale> after = read_grad_scaler(d->save(), "after");
  EXPECT_EQ(after->scale, 256.0f);  // a scale this low does not overflow: one more clean step
  EXPECT_EQ(after->clean_steps, 6);
}

// Stage time includes the copy on the copy stream (backend.h); the memory report is filled.
TEST_F(CudaContract, StageTimeAndDeviceReport) {
  auto b = make();
  b->stage({images.data(), labels.data(), 2});
  b->release_input();
  b->forward_backward();
  b->update(sgd, 0.1f);
  const std::vector<StepResult> r = b->collect();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_GT(r[0].times.stage, 0);
  const DeviceReport m = b->device_report();
  EXPECT_TRUE(m.device);
  EXPECT_GT(m.planned_bytes, 0u);
  EXPECT_GE(m.peak_in_use_bytes, m.planned_bytes);
  EXPECT_GE(m.total_bytes, m.peak_in_use_bytes);
}

TEST_F(CudaContract, BadLabelsAreErrors) {
  auto b = make();
  const std::vector<int32_t> bad = {1, 4};
  EXPECT_THROW(b->stage({images.data(), bad.data(), 2}), Error);
  EXPECT_THROW(b->update(sgd, 0.1f), Error);  // no step begun
}

TEST_F(CudaContract, CollectAndGraphReplayMatchEagerSteps) {
  auto eager = make();
  BackendConfig g;
  g.graph = true;
  auto graphed = make(g);
  std::vector<float> a, b;
  for (int i = 0; i < 5; ++i) {
    for (Backend* x : {eager.get(), graphed.get()}) {
      x->stage({images.data(), labels.data(), 2});
      x->release_input();
      x->forward_backward();
      x->update(sgd, 0.1f / float(i + 1));  // the graph reads lr from device memory
    }
  }
  for (const StepResult& r : eager->collect()) {
    a.push_back(r.loss);
    EXPECT_GT(r.times.forward, 0);
    EXPECT_GT(r.times.backward, 0);
    EXPECT_GT(r.times.update, 0);
    EXPECT_FALSE(r.skipped);
  }
  for (const StepResult& r : graphed->collect()) b.push_back(r.loss);
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(b.size(), 5u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4f * a[i]) << "step " << i;
  EXPECT_LT(a.back(), a.front());  // one batch, five steps: the loss falls
}

TEST_F(CudaContract, ActivityAndAlgorithms) {
  BackendConfig c;
  c.record_activity = true;
  c.conv_algorithm = "fixed:winograd_nonfused";
  auto b = make(c);
  step(*b, true);
  const std::vector<ActivityRecord> records = b->take_activity();
  int kernels = 0, copies = 0;
  for (const ActivityRecord& r : records) {
    EXPECT_LE(r.begin_ns, r.end_ns);
    kernels += r.kind == ActivityRecord::Kind::kernel && r.stream == kComputeStreamId;
    copies += r.kind == ActivityRecord::Kind::memcpy && r.stream == kCopyStreamId;
  }
  EXPECT_GT(kernels, 20);
  // The step's marker kernel labels what follows it with the step (the backend's first: 0).
  EXPECT_TRUE(std::any_of(records.begin(), records.end(),
                          [](const ActivityRecord& r) { return r.step == 0; }));
  EXPECT_GE(copies, 1);
  // The loop windows a device's steps by these records on the compute stream.
  EXPECT_TRUE(b->activity_timeline().asynchronous);
  EXPECT_EQ(b->activity_timeline().compute_stream, kComputeStreamId);
  const std::vector<ConvChoice> choices = b->algorithms();
  EXPECT_EQ(choices.size(), size_t(20 * 3 - 1));  // 20 convs, no image gradient for conv1
  bool fell_back = false;
  for (const ConvChoice& ch : choices)
    fell_back |= ch.algorithm.find("heuristic") != std::string::npos;
  EXPECT_TRUE(fell_back);  // Winograd does not serve 1x1 or strided convolutions
  BackendConfig e;
  e.conv_algorithm = "exhaustive";
  auto x = make(e);
  double measured = 0;
  for (const ConvChoice& ch : x->algorithms()) measured += ch.measured_ms;
  EXPECT_GT(measured, 0);
}

}  // namespace
}  // namespace stoker::gpu
