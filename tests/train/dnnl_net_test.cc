// SPDX-License-Identifier: Apache-2.0
// What only the CPU backend (oneDNN, train/cpu) has; the numerics of its steps, layer by
// layer against the reference network, are the conformance suite's
// (backend_conformance_test.cc, through Backend::debug_tensor). Here: each convolution runs
// the algorithm its policy names (oneDNN's implementation strings), unknown algorithms and
// layouts are refused, every primitive is recorded when asked, and bf16 (native or emulated)
// tracks the f32 reference.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.h"
#include "models/normal.h"
#include "models/resnet.h"
#include "tests/skip_policy.h"
#include "tests/train/backend_cases.h"
#include "train/cpu/cpu_backend.h"
#include "train/reference/network.h"

namespace stoker::cpu {
namespace {

using test::error;
using test::resnet;
using test::tame_init;
using test::tensor;
using test::values;

// What each convolution pass ran, from oneDNN's implementation strings (Backend::algorithms()):
// every pass is there (forward, backward_data but for conv1, backward_weights), none runs
// oneDNN's slow reference kernels (below AVX2 only the forward has JIT kernels) and none runs
// Winograd. Returns how many passes ran Winograd.
int expect_algorithms(const Network& net, const std::vector<ConvChoice>& choices,
                      const std::string& policy) {
  const std::string isa = cpu_isa_name();
  const bool backward_jit = isa.rfind("avx2", 0) == 0 || isa.rfind("avx512", 0) == 0;
  int convs = 0;
  for (const Layer& l : net.layers) convs += l.kind == LayerKind::conv;
  EXPECT_EQ(int(choices.size()), 3 * convs - 1) << policy;
  int winograd = 0;
  for (const ConvChoice& c : choices) {
    const auto it = std::find_if(net.layers.begin(), net.layers.end(),
                                 [&](const Layer& l) { return l.name == c.layer; });
    EXPECT_NE(it, net.layers.end()) << c.layer;
    if (it == net.layers.end()) continue;
    const std::string what = c.layer + " " + c.pass + ": " + c.algorithm;
    EXPECT_FALSE(c.algorithm.empty()) << what;
    if (backward_jit || c.pass == "forward") {
      EXPECT_EQ(c.algorithm.rfind("ref", 0), std::string::npos) << policy << ", " << what;
    }
    winograd += c.algorithm.find("wino") != std::string::npos;
  }
  return winograd;
}

static_assert(!std::is_copy_constructible_v<DnnlNet> && !std::is_move_constructible_v<DnnlNet>,
              "host steps hold pointers into the net: it must stay where it was planned");

// What each convolution ran, from oneDNN's implementation strings: fixed:direct and
// heuristic run every pass on a JIT kernel, and Winograd nowhere; fixed:winograd, which
// oneDNN 3 no longer has on x86 CPUs, is an error naming why (not a quiet direct plan).
TEST(CpuBackend, FixedAlgorithmsRunWhatTheySay) {
  const Network net = resnet(18, 4);
  const BackendConfig base{.batch = 2, .height = 64, .width = 64};
  BackendConfig wino = base, direct = base;
  wino.conv_algorithm = parse_conv_algorithm("fixed:winograd");
  direct.conv_algorithm = parse_conv_algorithm("fixed:direct");
  EXPECT_EQ(expect_algorithms(net, make_cpu_backend(net, direct)->diagnostics().algorithms(),
                              "fixed:direct"),
            0);
  EXPECT_EQ(
      expect_algorithms(net, make_cpu_backend(net, base)->diagnostics().algorithms(), "heuristic"),
      0);
  try {
    make_cpu_backend(net, wino);
    ADD_FAILURE() << "fixed:winograd was planned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no Winograd convolution on x86 CPUs"), std::string::npos)
        << e.what();
  }
}

TEST(CpuBackend, UnknownAlgorithmAndLayoutAreErrors) {
  const Network net = resnet(18, 4);
  // ("auto", an older word, is heuristic: train/conv_algorithm.h.)
  for (const char* algo : {"exhaustive", "fixed:fft"}) {
    try {
      make_cpu_backend(
          net,
          {.batch = 2, .height = 32, .width = 32, .conv_algorithm = parse_conv_algorithm(algo)});
      FAIL() << "expected stoker::Error for " << algo;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(algo), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(
      make_cpu_backend(net, {.batch = 2, .height = 32, .width = 32, .layout = ComputeLayout::nhwc}),
      Error);
}

// Each primitive's interval on the compute thread, in order and without overlap, tagged with
// the step; nothing recorded unless asked.
TEST(CpuBackend, RecordsEveryPrimitiveWhenAsked) {
  const Network net = resnet(18, 4);
  std::vector<float> images(2 * 3 * 32 * 32, 0.5f);
  const std::vector<int32_t> labels = {1, 2};
  std::unique_ptr<Backend> off = make_cpu_backend(net, {.batch = 2, .height = 32, .width = 32});
  off->load(init_checkpoint(net, 1), "init");
  test::step(*off, images.data(), labels.data(), 2);
  EXPECT_TRUE(off->diagnostics().take_activity().empty());

  std::unique_ptr<Backend> on =
      make_cpu_backend(net, {.batch = 2, .height = 32, .width = 32, .record_activity = true});
  on->load(init_checkpoint(net, 1), "init");
  for (int k = 0; k < 2; ++k) {
    on->stage({images.data(), labels.data(), 2});
    on->forward_backward();
    on->update({}, 0.1f);
  }
  EXPECT_EQ(on->collect().size(), 2u);
  const std::vector<ActivityRecord> a = on->diagnostics().take_activity();
  const DnnlNet& d = dnnl_net_of(*on);
  const size_t per_step = d.forward_train.size() + d.backward.size() + 1;  // + SGD
  ASSERT_EQ(a.size(), 2 * per_step);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].kind, ActivityRecord::Kind::primitive);
    EXPECT_LE(a[i].begin_ns, a[i].end_ns);
    if (i > 0) {
      EXPECT_GE(a[i].begin_ns, a[i - 1].end_ns) << a[i].name;
    }
    EXPECT_EQ(a[i].step, int64_t(i / per_step)) << a[i].name;
  }
  EXPECT_EQ(a.front().name, d.forward_train.front().what);
  EXPECT_EQ(a[per_step - 1].name, "sgd update");
  EXPECT_TRUE(on->diagnostics().take_activity().empty());  // taken
  EXPECT_FALSE(on->caps().asynchronous);                   // host windows bound the CPU's work
  EXPECT_TRUE(on->caps().activity_records);
}

// Sets an environment variable for one scope, so a test that throws does not leave it set
// for the tests after it in the same process.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name); }
  const char* name;
};

// bf16 activations and weights (f32 master weights, gradients and statistics) against the
// f32 reference. Without native bf16 the backend refuses bf16 unless STOKER_TEST_BF16 is set:
// then oneDNN emulates it (slowly) with AVX-512, which checks the bf16 plan on any machine
// with AVX-512, and there only: elsewhere oneDNN has no bf16 kernel at all, so the test says
// so and skips (ONEDNN_MAX_CPU_ISA=AVX2 shows that case on any x86 machine).
TEST(CpuBackend, Bf16TracksTheF32Reference) {
  if (!cpu_has_native_bf16() && cpu_isa_name().rfind("avx512", 0) != 0) {
    STOKER_SKIP_HONEST("not-applicable", "oneDNN has no bf16 kernels for "
                                             << cpu_isa_name()
                                             << " (native bf16 or AVX-512 emulation needed)");
  }
  const Network net = resnet(18, 10);
  const Checkpoint init = tame_init(net, 11);
  std::unique_ptr<Backend> backend = [&] {
    const ScopedEnv emulate("STOKER_TEST_BF16", "1");
    return make_cpu_backend(net, {.batch = 4,
                                  .height = 48,
                                  .width = 48,
                                  .precision = Precision::bf16,
                                  .label_smoothing = 0.1f});
  }();
  backend->load(init, "init");
  ref::ReferenceNet r = ref::make_reference_net(net, 4, 48, 48);
  ref::load_parameters(r, init, "init");
  std::vector<float> images(4 * 3 * 48 * 48);
  Rng rng(7);
  fill_normal(rng, 1.0, images);
  const std::vector<int32_t> labels = {3, 0, 7, 9};
  const float ref_loss = ref::forward_backward(r, images.data(), labels.data(), 0.1f);
  const float loss = test::step(*backend, images.data(), labels.data(), 4);
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

// The lowering's fused ops (train/lowering.h) compute what the unfused layers compute, bit for
// bit: the add with its ReLU post-op rounds once where the add and the ReLU round twice, and
// rounding keeps the sign; the backward's ReLU mask comes from r instead of y + z, the same
// signs. So two steps of each, f32 and (where oneDNN has bf16 kernels) bf16, give identical
// losses, logits, gradients and parameters. And the fused plan really fuses: no ReLU runs as
// a primitive of its own.
TEST(CpuBackend, FusedOpsGiveTheUnfusedBits) {
  const bool bf16 = cpu_has_native_bf16() || cpu_isa_name().rfind("avx512", 0) == 0;
  for (const int depth : {18, 50}) {
    for (const Precision p : {Precision::f32, Precision::bf16}) {
      if (p == Precision::bf16 && !bf16) continue;
      const std::string what = fmt::format("resnet{} {}", depth, precision_name(p));
      const Network net = resnet(depth, 10);
      const Checkpoint init = tame_init(net, 5);
      std::vector<float> images(4 * 3 * 40 * 40);
      Rng rng(3);
      fill_normal(rng, 1.0, images);
      const std::vector<int32_t> labels = {1, 0, 7, 9};
      std::vector<std::unique_ptr<Backend>> b;
      for (const uint32_t fusions : {0u, kAllFusions}) {
        const ScopedEnv emulate("STOKER_TEST_BF16", "1");
        b.push_back(make_cpu_backend(net, {.batch = 4,
                                           .height = 40,
                                           .width = 40,
                                           .precision = p,
                                           .record_activity = true,
                                           .fusions = fusions}));
        b.back()->load(init, "init");
      }
      for (int k = 0; k < 2; ++k) {
        const float unfused = test::step(*b[0], images.data(), labels.data(), 4);
        const float fused = test::step(*b[1], images.data(), labels.data(), 4);
        EXPECT_EQ(fused, unfused) << what << " step " << k;
        const std::span<const float> l0 = b[0]->logits(), l1 = b[1]->logits();
        EXPECT_TRUE(std::equal(l0.begin(), l0.end(), l1.begin(), l1.end()))
            << what << " step " << k << ": logits";
        const Checkpoint g0 = b[0]->gradients(), g1 = b[1]->gradients();
        for (const Param& q : net.params)
          if (q.trainable) {
            EXPECT_EQ(values(tensor(g1, q.name)), values(tensor(g0, q.name)))
                << what << " step " << k << ": gradient of " << q.name;
          }
        for (auto& one : b) one->update({}, 0.1f);
      }
      const Checkpoint s0 = b[0]->save(), s1 = b[1]->save();
      for (const Param& q : net.params)
        if (q.dtype == ParamType::f32) {
          EXPECT_EQ(values(tensor(s1, q.name)), values(tensor(s0, q.name)))
              << what << " " << q.name;
        }
      int blocks = 0, relus = 0;
      for (const Layer& l : net.layers) {
        blocks += l.kind == LayerKind::add;
        relus += l.kind == LayerKind::relu;
      }
      // Every ReLU runs inside a batch norm's primitive or an add's.
      const DnnlNet &d0 = dnnl_net_of(*b[0]), &d1 = dnnl_net_of(*b[1]);
      EXPECT_EQ(d0.forward_train.size() - d1.forward_train.size(), size_t(relus)) << what;
      EXPECT_EQ(d0.forward_eval.size() - d1.forward_eval.size(), size_t(relus)) << what;
      int fused_adds = 0;
      for (const Step& s : d1.forward_train)
        fused_adds += s.what.find("add forward (+relu)") != std::string::npos;
      EXPECT_EQ(fused_adds, blocks) << what;
      for (auto& one : b) one->diagnostics().take_activity();
    }
  }
}

TEST(CpuBackend, Bf16IsRefusedWithoutNativeSupport) {
  if (cpu_has_native_bf16()) STOKER_SKIP_HONEST("not-applicable", "this CPU has native bf16");
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
