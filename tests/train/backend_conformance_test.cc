// SPDX-License-Identifier: Apache-2.0
// One suite for every backend this build has (built_backends(): "cpu", and "cuda" where the
// GPU backend is built; it skips, saying why, where no device can run it), in the manner of
// ggml's test-backend-ops: a whole ResNet-18 training step against the reference network
// (train/reference) for f32 and u8 input in NCHW and NHWC, then the Backend contract:
// repeatable steps, collect() semantics, torch SGD, save/load round trip, errors.
// Layer-by-layer checks need a backend's internals: they stay in each backend's own test.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "augment/collate.h"
#include "common/error.h"
#include "models/normal.h"
#include "tests/skip_policy.h"
#include "tests/train/backend_cases.h"
#include "train/backend.h"
#include "train/reference/network.h"

namespace stoker {
namespace {

using test::error;
using test::tensor;
using test::values;

// The backend, or the reason it cannot run on this machine (no device, no driver): then the
// test skips with that reason. Any other construction error is a failure.
std::unique_ptr<Backend> try_make(const std::string& name, const Network& net,
                                  const BackendConfig& config, std::string& why_not) {
  try {
    return make_backend(name, net, config);
  } catch (const Error& e) {
    const std::string m = e.what();
    if (m.find("no CUDA device") == std::string::npos && m.find("driver") == std::string::npos)
      throw;
    why_not = m;
    return nullptr;
  }
}

#define MAKE_OR_SKIP(var, name, net, config)                             \
  std::string var##_why;                                                 \
  std::unique_ptr<Backend> var = try_make(name, net, config, var##_why); \
  if (!var) STOKER_SKIP_UNAVAILABLE(std::string(var##_why))

// f32 (with TF32 off) on a GPU sums in other orders with other algorithms than oneDNN.
double tolerance(const std::string& backend) {
  return backend == "cpu" ? 1e-4 : 1e-3;
}

struct InputCase {
  int64_t batch, size;
  InputType type;
  bool nhwc;
};

std::string input_name(const InputCase& c) {
  return fmt::format("n{}_{}px_{}_{}", c.batch, c.size, c.type == InputType::u8 ? "u8" : "f32",
                     c.nhwc ? "nhwc" : "nchw");
}

class WholeStep : public ::testing::TestWithParam<std::tuple<std::string, InputCase>> {};

// Loss, logits, every parameter gradient, the running statistics and the eval logits of one
// step against the reference network, given the same images (u8 through the loader's own
// normalisation table for the reference).
TEST_P(WholeStep, MatchesTheReferenceNetwork) {
  const auto& [name, cs] = GetParam();
  const Network net = test::resnet(18, 10);
  const Checkpoint init = test::tame_init(net, 11);
  BackendConfig config;
  config.batch = cs.batch;
  config.height = config.width = cs.size;
  config.input.type = cs.type;
  config.input.nhwc = cs.nhwc;
  config.label_smoothing = 0.1f;
  MAKE_OR_SKIP(backend, name, net, config);
  backend->load(init, "init");

  const size_t n = size_t(cs.batch * 3 * cs.size * cs.size);
  std::vector<float> images(n);  // NCHW, what the reference reads
  std::vector<uint8_t> pixels(n);
  Rng rng(7);
  if (cs.type == InputType::u8) {
    OutputSpec spec;
    const Normalizer norm(spec);
    const size_t hw = size_t(cs.size * cs.size);
    for (size_t i = 0; i < n; ++i) {
      pixels[i] = uint8_t(rng.next() >> 56);
      images[i] = norm.lut[(i / hw) % 3][pixels[i]];
    }
  } else {
    fill_normal(rng, 1.0, images);
  }
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < cs.batch; ++i) labels.push_back(int32_t((i * 7 + 3) % 10));
  const void* given = nullptr;
  std::vector<float> images_nhwc;
  std::vector<uint8_t> pixels_nhwc;
  if (cs.type == InputType::u8) {
    if (cs.nhwc) pixels_nhwc = test::nchw_to_nhwc(pixels, cs.batch, 3, cs.size, cs.size);
    given = cs.nhwc ? pixels_nhwc.data() : pixels.data();
  } else {
    if (cs.nhwc) images_nhwc = test::nchw_to_nhwc(images, cs.batch, 3, cs.size, cs.size);
    given = cs.nhwc ? images_nhwc.data() : images.data();
  }

  ref::ReferenceNet r = ref::make_reference_net(net, cs.batch, cs.size, cs.size);
  ref::load_parameters(r, init, "init");
  const float ref_loss = ref::forward_backward(r, images.data(), labels.data(), 0.1f);
  const float loss = test::step(*backend, given, labels.data(), cs.batch);
  const double tol = tolerance(name);
  EXPECT_NEAR(loss, ref_loss, 10 * tol * std::max(1.0f, std::abs(ref_loss)));
  EXPECT_LT(error(ref::logits(r), backend->logits()), tol) << "logits";

  const Checkpoint grads = backend->gradients();
  const Checkpoint state = backend->save();
  double worst = 0;
  for (const Param& p : net.params) {
    if (p.trainable) {
      const double e = error(ref::gradient(r, p.name), values(tensor(grads, p.name)));
      worst = std::max(worst, e);
      EXPECT_LT(e, tol) << "gradient of " << p.name;
    } else if (p.dtype == stoker::ParamType::f32) {
      EXPECT_LT(error(ref::parameter(r, p.name), values(tensor(state, p.name))), tol) << p.name;
    } else {
      std::vector<int64_t> count(1);
      copy_values(tensor(state, p.name), count);
      EXPECT_EQ(count[0], 1) << p.name;
    }
  }
  backend->stage({given, labels.data(), cs.batch});
  backend->forward_eval();
  const std::vector<float> eval(backend->logits().begin(), backend->logits().end());
  backend->release_input();
  EXPECT_LT(error(ref::forward_eval(r, images.data()), eval), tol) << "eval logits";
  fmt::print("{} {}: loss {} vs {}, worst parameter gradient error {:.2e}; {}\n", name,
             input_name(cs), loss, ref_loss, worst, backend->describe());
}

INSTANTIATE_TEST_SUITE_P(
    Backends, WholeStep,
    ::testing::Combine(::testing::ValuesIn(built_backends()),
                       ::testing::Values(InputCase{4, 40, InputType::f32, false},
                                         InputCase{2, 40, InputType::f32, true},
                                         InputCase{4, 40, InputType::u8, false},
                                         InputCase{2, 40, InputType::u8, true})),
    [](const auto& info) {
      return fmt::format("{}_{}", std::get<0>(info.param), input_name(std::get<1>(info.param)));
    });

class Contract : public ::testing::TestWithParam<std::string> {
 protected:
  BackendConfig config() const {
    BackendConfig c;
    c.batch = 2;
    c.height = c.width = 32;
    c.label_smoothing = 0.1f;
    return c;
  }
  void SetUp() override {
    Rng rng(3);
    fill_normal(rng, 1.0, images);
  }
  Network net = test::resnet(18, 4);
  Checkpoint init = init_checkpoint(net, 5);
  std::vector<float> images = std::vector<float>(2 * 3 * 32 * 32);
  std::vector<int32_t> labels = {1, 3};
};

// Batch statistics make a second forward on the same batch identical; gradients are
// written, not summed. The same bits on every backend under the default (heuristic)
// algorithm policy: a GPU picks deterministic convolution algorithms first and computes max
// pooling's backward without atomics (train/README.md, "Reproducibility").
TEST_P(Contract, StepsAreRepeatableAndWriteGradients) {
  MAKE_OR_SKIP(b, GetParam(), net, config());
  b->load(init, "init");
  const float loss = test::step(*b, images.data(), labels.data(), 2);
  const std::vector<float> g = values(tensor(b->gradients(), "conv1.weight"));
  EXPECT_EQ(test::step(*b, images.data(), labels.data(), 2), loss);
  EXPECT_EQ(values(tensor(b->gradients(), "conv1.weight")), g);
}

// collect(): one result per step since the last call, oldest first, each the loss its
// logits give (softmax cross-entropy with the label smoothing); phase times filled.
TEST_P(Contract, CollectReturnsEveryStepSinceTheLastCall) {
  MAKE_OR_SKIP(b, GetParam(), net, config());
  b->load(init, "init");
  EXPECT_TRUE(b->collect().empty());
  std::vector<float> from_logits;
  for (int k = 0; k < 3; ++k) {
    b->stage({images.data(), labels.data(), 2});
    b->forward_backward();
    const std::span<const float> z = b->logits();  // waits for this step
    double loss = 0;
    for (int64_t i = 0; i < 2; ++i) {
      const float* row = z.data() + i * 4;
      double mx = row[0], sum = 0, mean_logp = 0;
      for (int c = 1; c < 4; ++c) mx = std::max(mx, double(row[c]));
      for (int c = 0; c < 4; ++c) sum += std::exp(double(row[c]) - mx);
      const double lse = mx + std::log(sum);
      for (int c = 0; c < 4; ++c) mean_logp += (double(row[c]) - lse) / 4;
      loss += -(0.9 * (double(row[labels[size_t(i)]]) - lse) + 0.1 * mean_logp) / 2;
    }
    from_logits.push_back(float(loss));
    b->update({.momentum = 0.9f}, 0.05f);
    b->release_input();
  }
  const std::vector<StepResult> r = b->collect();
  ASSERT_EQ(r.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(r[k].loss, from_logits[k], 1e-5 * std::max(1.0f, from_logits[k])) << k;
    EXPECT_GT(r[k].times.forward, 0) << k;
    EXPECT_GT(r[k].times.backward, 0) << k;
    EXPECT_GT(r[k].times.update, 0) << k;
    EXPECT_FALSE(r[k].skipped);
  }
  EXPECT_NE(r[0].loss, r[2].loss);  // the updates changed the model
  EXPECT_TRUE(b->collect().empty());
}

TEST_P(Contract, UpdateIsTorchSgdOnTheGradients) {
  MAKE_OR_SKIP(b, GetParam(), net, config());
  b->load(init, "init");
  test::step(*b, images.data(), labels.data(), 2);
  const Checkpoint grads = b->gradients();
  const SgdConfig sgd{.momentum = 0.9f, .weight_decay = 1e-4f, .decay_bn_and_bias = false};
  b->update(sgd, 0.1f);
  const Checkpoint after = b->save();
  // The same step on plain vectors with sgd_step, the function checked against torch.
  for (const Param& p : net.params) {
    if (!p.trainable) continue;
    std::vector<float> w = values(tensor(init, p.name));
    const std::vector<float> g = values(tensor(grads, p.name));
    std::vector<float> m(w.size());
    bool has = false;
    const SgdParam sp{w.data(), g.data(), m.data(), &has, w.size(), p.shape.size() == 1};
    sgd_step(sgd, 0.1f, std::span(&sp, 1));
    const double tol = GetParam() == "cpu" ? 0 : 1e-6;  // a GPU may fuse differently
    EXPECT_LE(error(w, values(tensor(after, p.name))), tol) << p.name;
    EXPECT_LE(error(m, values(tensor(after, std::string(kMomentumPrefix) + p.name))), tol)
        << p.name;
  }
}

TEST_P(Contract, SaveLoadRoundTripsInTorchLayout) {
  MAKE_OR_SKIP(b, GetParam(), net, config());
  b->load(init, "init");
  const Checkpoint saved = b->save();
  check_checkpoint(saved, net, "saved");  // torchvision's keys and shapes, no momentum yet
  for (const Tensor& t : init.tensors) EXPECT_EQ(tensor(saved, t.name).bytes, t.bytes) << t.name;
  test::step(*b, images.data(), labels.data(), 2);
  b->update({.momentum = 0.9f}, 0.1f);
  const Checkpoint stepped = b->save();
  MAKE_OR_SKIP(other, GetParam(), net, config());
  other->load(stepped, "stepped");
  const Checkpoint again = other->save();
  ASSERT_EQ(again.tensors.size(), stepped.tensors.size());
  for (size_t i = 0; i < again.tensors.size(); ++i)
    EXPECT_EQ(again.tensors[i].bytes, stepped.tensors[i].bytes) << again.tensors[i].name;
  // And the loaded copy steps like the original.
  EXPECT_EQ(test::step(*other, images.data(), labels.data(), 2),
            test::step(*b, images.data(), labels.data(), 2));
}

// reshape(): a step at 32 px, one at 48, one at 32 again gives what fresh backends planned
// for each size give when each starts from the state the previous one saved: the state
// carries over exactly and nothing of the other shape's plan leaks into the next step.
TEST_P(Contract, ReshapeStepsLikeFreshBackendsAtEachSize) {
  const int64_t sides[] = {32, 48, 32};
  std::vector<std::vector<float>> batches;
  for (const int64_t side : sides) {
    Rng rng(uint64_t(side) + batches.size());
    batches.emplace_back(size_t(2 * 3 * side * side));
    fill_normal(rng, 1.0, batches.back());
  }
  const SgdConfig sgd{.momentum = 0.9f, .weight_decay = 1e-4f};
  MAKE_OR_SKIP(b, GetParam(), net, config());
  b->load(init, "init");
  std::vector<float> losses;
  for (size_t k = 0; k < 3; ++k) {
    b->reshape(sides[k], sides[k]);
    b->stage({batches[k].data(), labels.data(), 2, sides[k], sides[k]});
    b->forward_backward();
    b->update(sgd, 0.05f);
    losses.push_back(b->collect().at(0).loss);
    b->release_input();
  }
  const Checkpoint reshaped = b->save();
  const std::vector<float> logits(b->logits().begin(), b->logits().end());

  Checkpoint state = init;
  std::vector<float> fresh_logits;
  for (size_t k = 0; k < 3; ++k) {
    BackendConfig c = config();
    c.height = c.width = sides[k];
    MAKE_OR_SKIP(f, GetParam(), net, c);
    f->load(state, "the previous fresh backend");
    f->stage({batches[k].data(), labels.data(), 2});
    f->forward_backward();
    f->update(sgd, 0.05f);
    const float loss = f->collect().at(0).loss;
    const double tol = GetParam() == "cpu" ? 0 : 1e-5;  // cuDNN may pick non-deterministic algos
    EXPECT_NEAR(losses[k], loss, tol * std::max(1.0f, std::abs(loss))) << "step " << k;
    state = f->save();
    fresh_logits.assign(f->logits().begin(), f->logits().end());
  }
  ASSERT_EQ(reshaped.tensors.size(), state.tensors.size());
  for (size_t i = 0; i < state.tensors.size(); ++i) {
    if (GetParam() == "cpu") {
      EXPECT_EQ(reshaped.tensors[i].bytes, state.tensors[i].bytes) << state.tensors[i].name;
    } else if (state.tensors[i].dtype == TensorDType::f32) {
      EXPECT_LE(error(values(state.tensors[i]), values(reshaped.tensors[i])), 1e-4)
          << state.tensors[i].name;
    }
  }
  EXPECT_LE(error(fresh_logits, logits), GetParam() == "cpu" ? 0 : 1e-4);
  // Reshaping to the current size changes nothing.
  b->reshape(32, 32);
  EXPECT_EQ(b->save().tensors[0].bytes, reshaped.tensors[0].bytes);
}

TEST_P(Contract, BadInputIsAnErrorNamingIt) {
  MAKE_OR_SKIP(b, GetParam(), net, config());
  b->load(init, "init");
  const std::vector<int32_t> bad = {1, 4};
  try {
    b->stage({images.data(), bad.data(), 2});
    b->forward_backward();
    b->collect();
    FAIL() << "expected stoker::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("label 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(b->load(init_checkpoint(test::resnet(18, 10), 1), "other"), Error);
  BackendConfig c = config();
  c.batch = 1;  // 32 x 32 at batch 1: the last stage's batch norm sees one value per channel
  EXPECT_THROW(make_backend(GetParam(), net, c), Error);
  c.batch = 0;
  EXPECT_THROW(make_backend(GetParam(), net, c), Error);
  c = config();
  c.conv_algorithm = "fixed:no-such-algorithm";
  try {
    make_backend(GetParam(), net, c);
    FAIL() << "expected stoker::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-algorithm"), std::string::npos) << e.what();
  }
}

// Every precision either builds or is refused by a one-line error naming it; the CPU has
// no TF32 or f16 path.
TEST_P(Contract, UnsupportedPrecisionIsAnErrorNamingIt) {
  for (Precision p : {Precision::f32, Precision::tf32, Precision::f16, Precision::bf16}) {
    BackendConfig c = config();
    c.precision = p;
    const bool cpu_refuses = GetParam() == "cpu" && (p == Precision::tf32 || p == Precision::f16);
    try {
      std::string why;
      std::unique_ptr<Backend> b = try_make(GetParam(), net, c, why);
      if (!b) STOKER_SKIP_UNAVAILABLE(why);
      EXPECT_FALSE(cpu_refuses) << precision_name(p) << " accepted";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(precision_name(p)), std::string::npos) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
      EXPECT_NE(p, Precision::f32) << m;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, Contract, ::testing::ValuesIn(built_backends()),
                         [](const auto& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(WholeStep);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Contract);

}  // namespace
}  // namespace stoker
