// SPDX-License-Identifier: Apache-2.0
// One suite for every backend this build has (built_backends(): "cpu", and "cuda" where the
// GPU backend is built; it skips, saying why, where no device can run it), in the manner of
// ggml's test-backend-ops: a training step against the reference network (train/reference)
// layer by layer through Backend::debug_tensor, within bounds per backend, row and kind of
// tensor (a GPU's from the oracle conformance_bounds.py), for f32 and u8 input in NCHW and
// NHWC, ResNet-18 and -50, and each backend's own algorithms, layouts and precisions; then the
// Backend contract: repeatable steps, collect() semantics, torch SGD, save/load round trip, the
// device report, errors.
// What only one backend has (oneDNN's algorithm names, CUDA Graphs, CUPTI) stays in its own
// test (dnnl_net_test, cuda_backend_test).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "augment/collate.h"
#include "common/error.h"
#include "models/normal.h"
#include "tests/skip_policy.h"
#include "tests/train/backend_cases.h"
#include "tests/train/conformance_bounds.h"
#include "tests/train/step_input.h"
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

// The largest error a step's tensors may have against the reference, per backend, row and kind
// of tensor, declared once (ggml's test-backend-ops way). Two measures per tensor: `max` is
// max |diff| / max |reference|, `norm` ||diff||_2 / ||reference||_2; `loss` bounds the loss's
// error relative to max(1, |loss|). The CPU sums fp32 in other orders than the reference's
// double accumulators: ~1e-6, up to ~3e-5 where batch norm sees few values per channel
// (ResNet-50 at 40 px); one hand-set bound, max measure only. Every cuda row's bounds come from
// an oracle: 4 times the error torch itself makes on the same step in the row's number format
// against fp64 (tests/train/conformance_bounds.py, which writes conformance_bounds.h and says
// why 4; a ctest recomputes it). A wrong layout, tap or missing gradient contribution gives
// 1e-1 or more in f32.
struct Bound {
  double max, norm;
};
// `row` is set where the bounds come from the oracle: there a tensor's own normalised bound,
// where the table has one, replaces its kind's.
struct Tolerance {
  Bound act, dact, grad, stat, logits, eval_logits;
  double loss;
  std::string row;
};

const test::OracleBound* find_bound(const std::string& row, std::string_view kind,
                                    std::string_view tensor) {
  for (const test::OracleBound& b : test::kOracleBounds)
    if (row == b.row && kind == b.kind && tensor == b.tensor) return &b;
  return nullptr;
}

Bound oracle_bound(const std::string& row, std::string_view kind) {
  if (const test::OracleBound* b = find_bound(row, kind, "*")) return {b->max, b->norm};
  ADD_FAILURE() << "no oracle bound for row " << row << ", " << kind
                << ": run tests/train/conformance_bounds.py --write";
  return {0, 0};
}

Tolerance tolerance(const std::string& backend, const std::string& row, Precision p) {
  if (backend == "cpu") {
    STOKER_CHECK_MSG(p == Precision::f32, "no cpu tolerance for {}", precision_name(p));
    const Bound b{1e-4, INFINITY};
    return {b, b, b, b, b, b, 1e-5, ""};
  }
  return {oracle_bound(row, "activation"),
          oracle_bound(row, "activation gradient"),
          oracle_bound(row, "parameter gradient"),
          oracle_bound(row, "running statistic"),
          oracle_bound(row, "logits"),
          oracle_bound(row, "eval logits"),
          oracle_bound(row, "loss").max,
          row};
}

// Both measures of one tensor of a kind (conformance_bounds.py's names) against its bound;
// returns the max measure.
double expect_within(std::span<const float> ref, std::span<const float> got, const Tolerance& tol,
                     std::string_view kind, const std::string& tensor, const std::string& what) {
  Bound b = kind == "activation"            ? tol.act
            : kind == "activation gradient" ? tol.dact
            : kind == "parameter gradient"  ? tol.grad
            : kind == "running statistic"   ? tol.stat
            : kind == "logits"              ? tol.logits
                                            : tol.eval_logits;
  if (!tol.row.empty())
    if (const test::OracleBound* own = find_bound(tol.row, kind, tensor)) b.norm = own->norm;
  const double e = test::error(ref, got), n = test::norm_error(ref, got);
  EXPECT_LT(e, b.max) << what;
  EXPECT_LT(n, b.norm) << what << " (normalised)";
  return e;
}

struct StepCase {
  int depth = 18;
  int64_t batch = 4, size = 40;
  DType type = DType::f32;
  bool nhwc = false;  // the input's layout
  Precision precision = Precision::f32;
  ComputeLayout layout = ComputeLayout::automatic;  // the backend's own (GPU only)
  const char* algorithm = "heuristic";
  const char* fusions = nullptr;  // --fusions' words; null: the default
};

std::string case_name(const StepCase& c) {
  std::string s = fmt::format("r{}_n{}_{}px_{}_{}", c.depth, c.batch, c.size,
                              c.type == DType::u8 ? "u8" : "f32", c.nhwc ? "nhwc" : "nchw");
  if (c.precision != Precision::f32) s += fmt::format("_{}", precision_name(c.precision));
  if (c.layout != ComputeLayout::automatic)
    s += fmt::format("_compute_{}", compute_layout_name(c.layout));
  if (std::string_view(c.algorithm) != "heuristic") s += fmt::format("_{}", c.algorithm);
  std::replace(s.begin(), s.end(), ':', '_');
  if (c.fusions != nullptr) s += fmt::format("_fuse_{}", c.fusions);
  std::replace(s.begin(), s.end(), ',', '_');
  return s;
}

// The row's oracle bounds (conformance_bounds.py): PyTorch's own error on the computation, which
// fusion does not change, so a row that only fuses differently shares its unfused row's.
std::string bound_row(const StepCase& c) {
  StepCase unfused = c;
  unfused.fusions = nullptr;
  return case_name(unfused);
}

// gtest prints the parameter in each test's name: the case's name, not its bytes.
void PrintTo(const StepCase& c, std::ostream* os) {
  *os << case_name(c);
}

// Every backend: f32 and u8 input in NCHW and NHWC, and ResNet-50. Then what only one backend
// has: oneDNN's algorithms named (dnnl_net_test checks that they ran), a GPU's compute layouts
// and mixed precisions.
std::vector<std::tuple<std::string, StepCase>> step_cases() {
  const StepCase common[] = {
      {.batch = 4},
      {.batch = 2, .nhwc = true},
      {.batch = 4, .type = DType::u8},
      {.batch = 2, .type = DType::u8, .nhwc = true},
      {.depth = 50, .batch = 2},
  };
  std::vector<std::tuple<std::string, StepCase>> out;
  for (const std::string& b : built_backends()) {
    for (const StepCase& c : common) out.emplace_back(b, c);
    if (b == "cpu") {
      out.emplace_back(b,
                       StepCase{.batch = 2, .size = 64, .nhwc = true, .algorithm = "fixed:direct"});
    } else if (b == "cuda") {
      for (const ComputeLayout l : {ComputeLayout::nchw, ComputeLayout::nhwc}) {
        out.emplace_back(b, StepCase{.layout = l});
        out.emplace_back(b, StepCase{.precision = Precision::tf32, .layout = l});
      }
      // The conv_stats pattern (cuDNN frontend graphs) beside each, as --fusions asks for it:
      // f16 only, since cuDNN 9.19 plans no statistics epilogue for a bf16 conv on sm_90
      // (fe_graphs_test's deviceless planning).
      for (const Precision p : {Precision::f16, Precision::bf16})
        out.emplace_back(b, StepCase{.batch = 4, .size = 64, .precision = p});
      out.emplace_back(b, StepCase{.batch = 4,
                                   .size = 64,
                                   .precision = Precision::f16,
                                   .fusions = "bn_relu,bn_add_relu,conv_stats"});
      // And with the convs applying the batch norm they alone read (conv_prologue).
      out.emplace_back(b, StepCase{.batch = 4,
                                   .size = 64,
                                   .precision = Precision::f16,
                                   .fusions = "bn_relu,bn_add_relu,conv_stats,conv_prologue"});
    }
  }
  return out;
}

// One training step with lr = 0 (the weights stay). f16 starts at a loss scale of 2^16, which
// may overflow in the first steps (as torch's GradScaler, the step is then skipped and the
// scale halved): repeated until a step is clean; the running statistics then saw several
// batches. Returns the clean step and how many were skipped before it.
std::pair<StepResult, int> clean_step(Backend& b, const test::StepInput& in, int64_t batch) {
  int skipped = 0;
  while (true) {
    b.stage({in.given, in.labels.data(), batch});
    b.forward_backward();
    b.update({.momentum = 0.0f, .weight_decay = 0.0f}, 0.0f);
    const std::vector<StepResult> r = b.collect();
    b.release_input();
    EXPECT_EQ(r.size(), 1u);
    if (r.empty() || !r[0].skipped || ++skipped == 8)
      return {r.empty() ? StepResult{} : r[0], skipped};
  }
}

struct Worst {
  double act = 0, dact = 0, grad = 0;
  int acts = 0, dacts = 0;  // how many tensors the backend let the suite compare
};

// Every tensor's value after the forward and, in f32 and tf32, its gradient after the backward
// (f16/bf16 keep theirs loss-scaled in the compute format), where the backend keeps them.
void expect_layers(const ref::ReferenceNet& r, Backend& b, const Network& net, Precision p,
                   bool kept_gradients, const Tolerance& tol, Worst& w) {
  // Gradients stored in f32 and kept after the backward (BackendConfig).
  const bool f32_storage = (p == Precision::f32 || p == Precision::tf32) && kept_gradients;
  for (size_t t = 0; t < r.acts.size(); ++t) {
    const std::vector<float> act = b.diagnostics().debug_tensor(int(t), false);
    if (!act.empty()) {
      const std::string& name = net.tensors[t];
      w.act = std::max(
          w.act, expect_within(r.acts[t], act, tol, "activation", name, "activation " + name));
      ++w.acts;
    }
    if (!f32_storage) continue;
    const std::vector<float> dact = b.diagnostics().debug_tensor(int(t), true);
    if (dact.empty()) continue;
    w.dact = std::max(w.dact, expect_within(r.dacts[t], dact, tol, "activation gradient",
                                            net.tensors[t], "gradient of " + net.tensors[t]));
    ++w.dacts;
  }
  // Fusion and shared memory hide some tensors, never most: a backend without the hook fails.
  EXPECT_GT(w.acts, int(r.acts.size()) / 2);
  if (f32_storage) {
    EXPECT_GT(w.dacts, int(r.acts.size()) / 2);
  }
}

// Parameter gradients; with `one_batch`, the running statistics and their count.
void expect_parameters(const ref::ReferenceNet& r, Backend& b, const Network& net,
                       const Tolerance& tol, bool one_batch, Worst& w) {
  const Checkpoint grads = b.gradients();
  const Checkpoint state = b.save();
  for (const Param& p : net.params) {
    if (p.trainable) {
      w.grad = std::max(w.grad,
                        expect_within(ref::gradient(r, p.name), values(tensor(grads, p.name)), tol,
                                      "parameter gradient", p.name, "gradient of " + p.name));
    } else if (!one_batch) {
      continue;
    } else if (p.dtype == stoker::ParamType::f32) {
      expect_within(ref::parameter(r, p.name), values(tensor(state, p.name)), tol,
                    "running statistic", p.name, p.name);
    } else {
      std::vector<int64_t> count(1);
      copy_values(tensor(state, p.name), count);
      EXPECT_EQ(count[0], 1) << p.name;
    }
  }
}

class WholeStep : public ::testing::TestWithParam<std::tuple<std::string, StepCase>> {};

// One training step against the reference network, layer by layer, given the same images:
// the loss, every layer's output and (f32) every tensor's gradient, every parameter's
// gradient, the running statistics, the logits in training and in eval mode.
TEST_P(WholeStep, EveryLayerMatchesTheReferenceNetwork) {
  const auto& [name, cs] = GetParam();
  const Network net = test::resnet(cs.depth, 10);
  const Checkpoint init = test::tame_init(net, 11);
  BackendConfig config;
  config.batch = cs.batch;
  config.height = config.width = cs.size;
  config.input.dtype = cs.type;
  config.input.layout = cs.nhwc ? Layout::nhwc : Layout::nchw;
  config.layout = cs.layout;
  config.precision = cs.precision;
  config.label_smoothing = 0.1f;
  config.conv_algorithm = parse_conv_algorithm(cs.algorithm);
  if (cs.fusions != nullptr) config.fusions = parse_fusions(cs.fusions);
  // f32 storage compares every activation's gradient, which a GPU then keeps in memory of its
  // own; ResNet-50 on cuda (f32: tight bounds) and the mixed precisions compare the
  // parameters' gradients only, computed through shared gradient memory (the default).
  const bool f32_storage = cs.precision == Precision::f32 || cs.precision == Precision::tf32;
  config.keep_activation_gradients = f32_storage && !(name == "cuda" && cs.depth == 50);
  MAKE_OR_SKIP(backend, name, net, config);
  backend->load(init, "init");
  test::StepInput in;
  test::make_input(cs.batch, cs.size, cs.type, cs.nhwc, in);
  ref::ReferenceNet r = ref::make_reference_net(net, cs.batch, cs.size, cs.size);
  ref::load_parameters(r, init, "init");
  const float ref_loss = ref::forward_backward(r, in.reference.data(), in.labels.data(), 0.1f);

  const auto [result, skipped] = clean_step(*backend, in, cs.batch);
  ASSERT_FALSE(result.skipped) << "f16 overflowed 8 times";
  if (cs.precision != Precision::f16) {
    EXPECT_EQ(skipped, 0);
  }
  const Tolerance tol = tolerance(name, bound_row(cs), cs.precision);
  EXPECT_NEAR(result.loss, ref_loss, tol.loss * std::max(1.0f, std::abs(ref_loss)));
  Worst worst;
  expect_layers(r, *backend, net, cs.precision, config.keep_activation_gradients, tol, worst);
  expect_parameters(r, *backend, net, tol, skipped == 0, worst);
  if (skipped == 0) {
    expect_within(ref::logits(r), backend->logits(), tol, "logits", "logits", "logits");
    backend->stage({in.given, in.labels.data(), cs.batch});
    backend->forward_eval();
    const std::vector<float> eval(backend->logits().begin(), backend->logits().end());
    backend->release_input();
    expect_within(ref::forward_eval(r, in.reference.data()), eval, tol, "eval logits",
                  "eval logits", "eval logits");
  }
  // A fused row that fell back everywhere would pass as the unfused one: it must have fused.
  if (cs.fusions != nullptr &&
      std::string_view(cs.fusions).find("conv_stats") != std::string::npos) {
    EXPECT_EQ(backend->describe().find("conv_stats on 0 convs"), std::string::npos)
        << backend->describe();
    if (std::string_view(cs.fusions).find("conv_prologue") != std::string::npos) {
      EXPECT_EQ(backend->describe().find("conv_prologue on 0 convs"), std::string::npos)
          << backend->describe();
    }
  }
  fmt::print(
      "{} {}: loss {} vs {}; worst error activations {:.2e} ({} compared), their gradients "
      "{:.2e} ({}), parameter gradients {:.2e}; {}\n",
      name, case_name(cs), result.loss, ref_loss, worst.act, worst.acts, worst.dact, worst.dacts,
      worst.grad, backend->describe());
}

INSTANTIATE_TEST_SUITE_P(Backends, WholeStep, ::testing::ValuesIn(step_cases()),
                         [](const auto& info) {
                           return fmt::format("{}_{}", std::get<0>(info.param),
                                              case_name(std::get<1>(info.param)));
                         });

// Runs without a device: every cuda row finds its oracle bounds under its own name (a row
// renamed or added without running conformance_bounds.py --write fails here, not first on a
// borrowed GPU), and the low formats' gradients their per-tensor ones.
TEST(OracleBounds, EveryCudaRowHasItsBounds) {
  const Network net = test::resnet(18, 10);
  int rows = 0;
  for (const auto& [backend, cs] : step_cases()) {
    if (backend != "cuda") continue;
    ++rows;
    const std::string row = bound_row(cs);
    const Tolerance tol = tolerance(backend, row, cs.precision);
    EXPECT_GT(tol.loss, 0) << row;
    if (cs.precision == Precision::f32 || cs.depth != 18) continue;
    for (const Param& p : net.params) {
      if (p.trainable) {
        EXPECT_NE(find_bound(row, "parameter gradient", p.name), nullptr) << row << " " << p.name;
      }
    }
  }
  if (rows == 0) STOKER_SKIP_HONEST("not-applicable", "this build has no GPU backend");
}

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
  const Checkpoint g = b->gradients();
  EXPECT_EQ(test::step(*b, images.data(), labels.data(), 2), loss);
  const Checkpoint again = b->gradients();
  ASSERT_EQ(again.tensors.size(), g.tensors.size());
  for (size_t i = 0; i < g.tensors.size(); ++i)
    EXPECT_EQ(again.tensors[i].bytes, g.tensors[i].bytes) << g.tensors[i].name;
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
  // A step is reported once, for its forward_backward: an update after collect() adds none.
  test::step(*b, images.data(), labels.data(), 2);
  b->update({.momentum = 0.9f}, 0.05f);
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

// What the process holds on the host. `heap`: bytes malloc has handed out and not had back
// (glibc's mallinfo2, every thread's arena plus mmapped blocks; oneDNN allocates through
// posix_memalign), which does not move with page faults, trimming or the pages glibc keeps per
// arena. `rss`: the resident set (/proc/self/statm), which also sees what malloc does not
// count (oneDNN's JIT code pages, a driver's mappings).
struct HostUse {
  int64_t heap = 0, rss = 0;
};
HostUse host_use() {
  HostUse u;
  const struct mallinfo2 m = mallinfo2();
  u.heap = int64_t(m.uordblks + m.hblkhd);
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  u.rss = resident * int64_t(sysconf(_SC_PAGESIZE));
  return u;
}

// reshape() re-plans without leaking: 10 cycles of 48 px -> 32 px with a training step at
// each size, and after the 10th cycle the backend holds what it held after the 2nd (by then
// both shapes' primitives or algorithms are in their caches). A leak that matters is a plan,
// or a buffer of one, per reshape: 16 reshapes x (3 x ResNet-18's 45 MB of parameters,
// gradients and momentum, plus activations), gigabytes; one 32 px input batch (24 KB) per
// reshape is ~400 KB. (20 cycles took 117 s under ONEDNN_MAX_CPU_ISA=SSE41; test_isas.sh
// leaves this test to the default run: memory, not rounding.) The bounds:
//   host heap     64 KiB: allocator bookkeeping and oneDNN's caches move it by a few hundred
//                 bytes a cycle, up and down (measured on the CPU: +3.6 to +6.5 KB over 18).
//   resident set  64 MiB: glibc keeps the freed pages of a thread's arena resident until the
//                 top of that arena's heap (64 MiB at most on 64-bit) is trimmed; measured -16
//                 to +19 MB between cycles, +0.2 MB from the 2nd to the 20th.
//   device        the backend's own figure for its plan exactly; the device memory in use
//                 (cudaMemGetInfo's high-water mark) within 8 MiB, a few of the driver's 2 MiB
//                 allocation granules (cuDNN and cuBLAS may allocate lazily).
TEST_P(Contract, ReshapeCyclesHoldNoMoreMemory) {
  const int64_t sides[] = {48, 32};
  std::vector<std::vector<float>> batches;
  for (const int64_t side : sides) {
    Rng rng{uint64_t(side)};
    batches.emplace_back(size_t(2 * 3 * side * side));
    fill_normal(rng, 1.0, batches.back());
  }
  MAKE_OR_SKIP(b, GetParam(), net, config());
  b->load(init, "init");
  // 8 cycles past the baseline: a leaked 32 px input batch per reshape (~25 KB) would add
  // ~400 KB, six times the heap bound.
  constexpr int kCycles = 10;
  HostUse host[2];
  DeviceReport device[2];
  for (int cycle = 1; cycle <= kCycles; ++cycle) {
    for (size_t k = 0; k < 2; ++k) {
      b->reshape(sides[k], sides[k]);
      b->stage({batches[k].data(), labels.data(), 2, sides[k], sides[k]});
      b->forward_backward();
      b->update({.momentum = 0.9f}, 0.01f);
      ASSERT_EQ(b->collect().size(), 1u);
      b->release_input();
    }
    if (cycle == 2 || cycle == kCycles) {
      host[cycle / kCycles] = host_use();
      device[cycle / kCycles] = b->diagnostics().device_report();
    }
  }
  const int64_t heap_grew = host[1].heap - host[0].heap, rss_grew = host[1].rss - host[0].rss;
  fmt::print(
      "{}: over cycles 2..{} the host heap grew {} bytes ({} -> {}), the resident set {} "
      "bytes ({} -> {})\n",
      GetParam(), kCycles, heap_grew, host[0].heap, host[1].heap, rss_grew, host[0].rss,
      host[1].rss);
  EXPECT_LE(heap_grew, int64_t(64) << 10);
  EXPECT_LE(rss_grew, int64_t(64) << 20);
  if (b->caps().device) {
    EXPECT_EQ(device[1].planned_bytes, device[0].planned_bytes);
    EXPECT_LE(device[1].peak_in_use_bytes, device[0].peak_in_use_bytes + (size_t(8) << 20));
    fmt::print("{}: planned {} bytes at 32 px; device memory in use at most {} -> {} bytes\n",
               GetParam(), device[1].planned_bytes, device[0].peak_in_use_bytes,
               device[1].peak_in_use_bytes);
  }
}

// A NaN in the batch reaches the loss and the gradients, as in torch (batch norm spreads it
// over its channel and ReLU keeps it), so a training loop stops on it instead of going on with
// a finite loss (the CPU's fused batch norm + ReLU turned NaN into 0: dnnl_net.cc).
TEST_P(Contract, NanInputGivesANanLossAndGradients) {
  MAKE_OR_SKIP(b, GetParam(), net, config());
  b->load(init, "init");
  std::vector<float> bad = images;
  bad[777] = std::nanf("");
  EXPECT_TRUE(std::isnan(test::step(*b, bad.data(), labels.data(), 2)));
  size_t nan_tensors = 0;
  for (const auto& t : b->gradients().tensors) {
    const auto* v = reinterpret_cast<const float*>(t.bytes.data());
    nan_tensors += std::any_of(v, v + t.bytes.size() / 4, [](float x) { return std::isnan(x); });
  }
  EXPECT_GT(nan_tensors, 0u) << "no gradient holds a NaN";
  // The next finite batch steps normally again from the same state.
  b->load(init, "init");
  EXPECT_TRUE(std::isfinite(test::step(*b, images.data(), labels.data(), 2)));
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
  c.conv_algorithm = parse_conv_algorithm("fixed:no-such-algorithm");
  try {
    make_backend(GetParam(), net, c);
    FAIL() << "expected stoker::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-algorithm"), std::string::npos) << e.what();
  }
}

// A device backend reports its memory (planned <= peak in use <= the device's) and the stage
// time of its copy; a CPU's report says device = false and nothing else.
TEST_P(Contract, DeviceReportIsFilledOnDevicesOnly) {
  MAKE_OR_SKIP(b, GetParam(), net, config());
  b->load(init, "init");
  b->stage({images.data(), labels.data(), 2});
  b->forward_backward();
  b->update({.momentum = 0.9f}, 0.1f);
  const std::vector<StepResult> r = b->collect();
  b->release_input();
  ASSERT_EQ(r.size(), 1u);
  const DeviceReport m = b->diagnostics().device_report();
  if (b->caps().device) {
    EXPECT_GT(r[0].times.stage, 0);
    EXPECT_GT(m.planned_bytes, 0u);
    EXPECT_GE(m.peak_in_use_bytes, m.planned_bytes);
    EXPECT_GE(m.total_bytes, m.peak_in_use_bytes);
  } else {
    EXPECT_EQ(m.planned_bytes + m.peak_in_use_bytes + m.total_bytes + m.activity_lost, 0u);
  }
}

// Every precision either builds or is refused by a one-line error naming it; one the caps do
// not offer (the CPU has no TF32 or f16 path) is always refused.
TEST_P(Contract, UnsupportedPrecisionIsAnErrorNamingIt) {
  for (Precision p : {Precision::f32, Precision::tf32, Precision::f16, Precision::bf16}) {
    BackendConfig c = config();
    c.precision = p;
    const bool refuses = !backend_caps(GetParam()).offers(p);
    try {
      std::string why;
      std::unique_ptr<Backend> b = try_make(GetParam(), net, c, why);
      if (!b) STOKER_SKIP_UNAVAILABLE(why);
      EXPECT_FALSE(refuses) << precision_name(p) << " accepted";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(precision_name(p)), std::string::npos) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
      EXPECT_NE(p, Precision::f32) << m;
    }
  }
}

// What each backend declares it can do, written down here once more: a declaration changed
// by accident fails, and so does one the backend's own behaviour contradicts (below).
BackendCaps declared(const std::string& name) {
  const uint32_t all = precision_bit(Precision::f32) | precision_bit(Precision::tf32) |
                       precision_bit(Precision::f16) | precision_bit(Precision::bf16);
  if (name == "cpu")
    return {.activity_records = true,
            .fusions = kFuseBnRelu | kFuseBnAddRelu,
            .precisions = precision_bit(Precision::f32) | precision_bit(Precision::bf16)};
  if (name == "cuda")
    return {.device = true,
            .asynchronous = true,
            .pinned_host_memory = true,
            .device_input = true,
            .activity_records = true,
            .fusions = kFuseBnRelu | kFuseBnAddRelu | kFuseConvStats | kFuseConvPrologue,
            .precisions = all};
  ADD_FAILURE() << "backend " << name << " has no declaration in this test";
  return {};
}

void expect_caps(const BackendCaps& got, const BackendCaps& want, const std::string& what) {
  EXPECT_EQ(got.device, want.device) << what;
  EXPECT_EQ(got.asynchronous, want.asynchronous) << what;
  EXPECT_EQ(got.pinned_host_memory, want.pinned_host_memory) << what;
  EXPECT_EQ(got.device_input, want.device_input) << what;
  EXPECT_EQ(got.activity_records, want.activity_records) << what;
  EXPECT_EQ(got.fusions, want.fusions) << what;
  EXPECT_EQ(got.precisions, want.precisions) << what;
}

// Runs without a device: the registry's caps (backend_caps, what train and its decode choice
// read before a backend exists) are the declared ones.
TEST(Caps, TheRegistryGivesWhatEachBackendDeclares) {
  for (const std::string& name : built_backends())
    expect_caps(backend_caps(name), declared(name), name + " (backend_caps)");
  EXPECT_THROW(backend_caps("no-such-backend"), Error);
}

// A backend's caps are its declaration, and what it does agrees with them: a device fills its
// report; an asynchronous engine times the step on its own clock; pinned host memory comes
// with a pin hook; a device input stage hands out a slot and a producer; activity records come
// when asked for.
TEST_P(Contract, CapsAreDeclaredAndKept) {
  BackendConfig c = config();
  c.record_activity = true;
  MAKE_OR_SKIP(b, GetParam(), net, c);
  const BackendCaps caps = b->caps();
  expect_caps(caps, declared(GetParam()), GetParam());
  b->load(init, "init");
  b->stage({images.data(), labels.data(), 2});
  b->forward_backward();
  b->update({.momentum = 0.9f}, 0.1f);
  const std::vector<StepResult> r = b->collect();
  b->release_input();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].times.wall > 0, caps.asynchronous) << r[0].times.wall;
  EXPECT_EQ(b->diagnostics().device_report().total_bytes > 0, caps.device);
  EXPECT_EQ(!b->diagnostics().take_activity().empty(), caps.activity_records);
  EXPECT_EQ(static_cast<bool>(b->host_memory().pin), caps.pinned_host_memory);
  EXPECT_EQ(b->device_producer().device >= 0, caps.device_input);
  EXPECT_EQ(b->device_stage().images != nullptr, caps.device_input);  // last: it takes a slot
}

INSTANTIATE_TEST_SUITE_P(Backends, Contract, ::testing::ValuesIn(built_backends()),
                         [](const auto& info) { return info.param; });
// No GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST: with no backend built, Contract and
// WholeStep have no cases, and gtest fails them (GoogleTestVerification) rather than pass
// vacuously; this says why in so many words.
TEST(Caps, ABackendIsBuiltForTheSuiteToTest) {
  EXPECT_FALSE(built_backends().empty())
      << "this build has no backend (oneDNN nor CUDA): the suite would test nothing";
}

}  // namespace
}  // namespace stoker
