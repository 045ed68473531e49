// SPDX-License-Identifier: Apache-2.0
// The GPU backend's rules that need no device (train/gpu/gpu_policy.h): the cuDNN math type
// of each precision and which ranked results it accepts (no fp16 conversion under TF32, no
// tensor ops under f32, as torch), which precisions skip a step on a non-finite gradient, the
// planning fallback taken only on CUDNN_STATUS_NOT_SUPPORTED with the first error reported,
// the polling wait a data-parallel backend uses, and the loss scale's checkpoint form.
#include "train/gpu/gpu_policy.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/error.h"

namespace stoker::gpu {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// torch: cudnn.allow_tf32 False -> CUDNN_FMA_MATH, True -> CUDNN_DEFAULT_MATH, half types ->
// CUDNN_TENSOR_OP_MATH (aten/src/ATen/cudnn/Descriptors.h). Never ALLOW_CONVERSION, which
// lets cuDNN convert fp32 data to fp16.
TEST(ConvMathType, AsTorchPicksIt) {
  EXPECT_EQ(conv_math_type(Precision::f32), CUDNN_FMA_MATH);
  EXPECT_EQ(conv_math_type(Precision::tf32), CUDNN_DEFAULT_MATH);
  EXPECT_EQ(conv_math_type(Precision::f16), CUDNN_TENSOR_OP_MATH);
  EXPECT_EQ(conv_math_type(Precision::bf16), CUDNN_TENSOR_OP_MATH);
  for (Precision p : {Precision::f32, Precision::tf32, Precision::f16, Precision::bf16})
    EXPECT_NE(conv_math_type(p), CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION);
}

TEST(ConvMathType, RankedResultsThePrecisionAllows) {
  const std::vector<cudnnMathType_t> all = {CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH,
                                            CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, CUDNN_FMA_MATH};
  for (cudnnMathType_t r : all) {
    EXPECT_EQ(math_type_allowed(CUDNN_FMA_MATH, r), r == CUDNN_FMA_MATH) << int(r);
    EXPECT_EQ(math_type_allowed(CUDNN_DEFAULT_MATH, r), r != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
        << int(r);
    EXPECT_TRUE(math_type_allowed(CUDNN_TENSOR_OP_MATH, r)) << int(r);
  }
}

// torch.cuda.amp.GradScaler skips a step whose gradients are not finite (f16); without it
// (f32, TF32, bf16) torch.optim.SGD applies whatever the gradients hold, as the CPU backend.
TEST(NonFinite, OnlyTheDynamicLossScaleSkips) {
  EXPECT_TRUE(skips_nonfinite_step(Precision::f16));
  EXPECT_FALSE(skips_nonfinite_step(Precision::f32));
  EXPECT_FALSE(skips_nonfinite_step(Precision::tf32));
  EXPECT_FALSE(skips_nonfinite_step(Precision::bf16));
}

TEST(PlanningFallback, OnlyOnNotSupported) {
  EXPECT_TRUE(planning_fallback_allowed(CUDNN_STATUS_NOT_SUPPORTED));
  for (cudnnStatus_t s :
       {CUDNN_STATUS_BAD_PARAM, CUDNN_STATUS_EXECUTION_FAILED, CUDNN_STATUS_INTERNAL_ERROR,
        CUDNN_STATUS_ALLOC_FAILED, CUDNN_STATUS_NOT_INITIALIZED, CUDNN_STATUS_ARCH_MISMATCH})
    EXPECT_FALSE(planning_fallback_allowed(s)) << int(s);
}

// A fallback sequence: fused -> persistent -> plain, as CudnnNet::trial_step uses it.
struct Ladder {
  std::vector<std::string> left = {"unfused", "plain"};
  std::string fall_back() {
    if (left.empty()) return {};
    std::string next = left.front();
    left.erase(left.begin());
    return next;
  }
};

TEST(RunWithFallbacks, NotSupportedMovesOnAndSucceeds) {
  Ladder l;
  int calls = 0;
  run_with_fallbacks(
      "plan",
      [&] {
        if (++calls < 3) throw CudnnStatusError("refused", CUDNN_STATUS_NOT_SUPPORTED);
      },
      [&] { return l.fall_back(); });
  EXPECT_EQ(calls, 3);
  EXPECT_TRUE(l.left.empty());
}

TEST(RunWithFallbacks, AnyOtherErrorEndsItWithItsOwnMessage) {
  Ladder l;
  int calls = 0;
  const std::string e = error_of([&] {
    run_with_fallbacks(
        "plan",
        [&] {
          ++calls;
          throw CudnnStatusError("cuDNN: bad parameter at x.cc:1", CUDNN_STATUS_BAD_PARAM);
        },
        [&] { return l.fall_back(); });
  });
  EXPECT_EQ(calls, 1);  // no retry
  EXPECT_EQ(l.left.size(), 2u);
  EXPECT_EQ(e, "plan: cuDNN: bad parameter at x.cc:1");
  // A non-cuDNN error (a sticky CUDA fault) is not retried either.
  calls = 0;
  const std::string f = error_of([&] {
    run_with_fallbacks(
        "plan", [&] { ++calls, fail("CUDA runtime: illegal address"); },
        [&] { return l.fall_back(); });
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(f, "plan: CUDA runtime: illegal address");
}

// The first failure is what the user reads; a follow-on error after a fallback is named as
// the last, after the configurations tried.
TEST(RunWithFallbacks, ReportsTheFirstFailure) {
  Ladder l;
  int calls = 0;
  const std::string e = error_of([&] {
    run_with_fallbacks(
        "plan",
        [&] {
          if (++calls == 1) throw CudnnStatusError("fused refused", CUDNN_STATUS_NOT_SUPPORTED);
          throw CudnnStatusError("follow-on", CUDNN_STATUS_EXECUTION_FAILED);
        },
        [&] { return l.fall_back(); });
  });
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(e, "plan: fused refused (also with unfused; the last: follow-on)");
  // Every configuration refused: the first refusal, then each tried.
  Ladder m;
  const std::string g = error_of([&] {
    run_with_fallbacks(
        "plan", [&] { throw CudnnStatusError("no", CUDNN_STATUS_NOT_SUPPORTED); },
        [&] { return m.fall_back(); });
  });
  EXPECT_EQ(g, "plan: no (also with unfused, plain; the last: no)");
}

TEST(WaitPolling, PollsUntilReadyAndStopsOnErrorOrTimeout) {
  int checks = 0, polls = 0;
  EXPECT_TRUE(wait_polling([&] { return ++checks == 4; }, [&] { ++polls; }, 10,
                           std::chrono::microseconds(10)));
  EXPECT_EQ(checks, 4);
  EXPECT_EQ(polls, 3);  // polled between checks: an asynchronous error is seen while waiting
  // The poll's error (NCCL's asynchronous error) ends the wait.
  EXPECT_THROW(wait_polling([] { return false; }, [] { fail("peer gone"); }, 10,
                            std::chrono::microseconds(10)),
               Error);
  // Never ready: false after the timeout, not a hang.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(wait_polling([] { return false; }, [] {}, 0.05, std::chrono::microseconds(100)));
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(waited, 0.05);
}

TEST(CollectiveTimeout, DefaultEnvironmentAndBadValues) {
  unsetenv("STOKER_NCCL_TIMEOUT_S");
  EXPECT_EQ(collective_timeout_s(), 600);
  setenv("STOKER_NCCL_TIMEOUT_S", "2.5", 1);
  EXPECT_EQ(collective_timeout_s(), 2.5);
  for (const char* bad : {"0", "-1", "ten", "5s", "inf"}) {
    setenv("STOKER_NCCL_TIMEOUT_S", bad, 1);
    EXPECT_NE(error_of([] { collective_timeout_s(); }).find(bad), std::string::npos) << bad;
  }
  unsetenv("STOKER_NCCL_TIMEOUT_S");
}

TEST(Diagnostics, FusionCapAndKeptGradientsFromTheEnvironment) {
  unsetenv("STOKER_CUDNN_BN_FUSION");
  unsetenv("STOKER_GPU_KEEP_GRADIENTS");
  EXPECT_EQ(bn_fusion_cap(), 4);
  EXPECT_FALSE(keep_gradients_from_env());
  const std::pair<const char*, int> words[] = {{"plain", 0},    {"ex", 1},         {"relu", 2},
                                               {"add-relu", 3}, {"conv-stats", 4}, {"1", 1}};
  for (const auto& [word, level] : words) {
    setenv("STOKER_CUDNN_BN_FUSION", word, 1);
    EXPECT_EQ(bn_fusion_cap(), level) << word;
  }
  setenv("STOKER_CUDNN_BN_FUSION", "fused", 1);
  EXPECT_NE(error_of([] { bn_fusion_cap(); }).find("fused"), std::string::npos);
  setenv("STOKER_GPU_KEEP_GRADIENTS", "1", 1);
  EXPECT_TRUE(keep_gradients_from_env());
  setenv("STOKER_GPU_KEEP_GRADIENTS", "yes", 1);
  EXPECT_NE(error_of([] { keep_gradients_from_env(); }).find("yes"), std::string::npos);
  unsetenv("STOKER_CUDNN_BN_FUSION");
  unsetenv("STOKER_GPU_KEEP_GRADIENTS");
}

// NHWC batch norms start on cuDNN's persistent Ex kernels at every precision, as torch's
// channels_last ones do; f32 and tf32 among them (they ran the legacy kernels, 0.09x torch).
TEST(BatchNormStart, NhwcAtEveryPrecisionOnPersistentExCalls) {
  for (const Precision p : {Precision::f32, Precision::tf32, Precision::f16, Precision::bf16}) {
    const BackendConfig nhwc{.layout = ComputeLayout::nhwc, .precision = p};
    const BnStart s = bn_start(nhwc, 4);
    EXPECT_TRUE(s.persistent) << "precision " << int(p);
    EXPECT_EQ(s.level, 3) << "precision " << int(p);  // BN + add + ReLU; conv_stats not asked for
    const BackendConfig nchw{.layout = ComputeLayout::nchw, .precision = p};
    EXPECT_FALSE(bn_start(nchw, 4).persistent) << "precision " << int(p);
    EXPECT_EQ(bn_start(nchw, 4).level, 0) << "precision " << int(p);
  }
  // The automatic layout: NHWC for f16/bf16, NCHW for f32/tf32.
  EXPECT_TRUE(bn_start({.precision = Precision::bf16}, 4).persistent);
  EXPECT_FALSE(bn_start({.precision = Precision::tf32}, 4).persistent);
  // conv_stats where --fusions asks for it; STOKER_CUDNN_BN_FUSION's cap below either.
  const BackendConfig stats{
      .layout = ComputeLayout::nhwc, .precision = Precision::f16, .fusions = kAllFusions};
  EXPECT_EQ(bn_start(stats, 4).level, 4);
  EXPECT_EQ(bn_start(stats, 1).level, 1);
  EXPECT_TRUE(bn_start(stats, 0).persistent);  // plain calls, still persistent (the fallback
                                               // to spatial comes after level 0)
}

// torch saves GradScaler's state with the checkpoint and restores it; so does the GPU backend
// under f16, in the checkpoint's metadata with torch's state_dict names.
TEST(GradScaler, RoundTripsThroughCheckpointMetadata) {
  Checkpoint c;
  EXPECT_FALSE(read_grad_scaler(c, "c").has_value());  // none stored: start afresh
  for (const LossScale s : {LossScale{}, LossScale{.scale = 0.00048828125f, .clean_steps = 1999},
                            LossScale{.scale = 3.0e38f, .clean_steps = 0},
                            LossScale{.scale = 1.1754944e-38f, .clean_steps = 7}}) {
    c.metadata[std::string(kGradScalerKey)] = grad_scaler_metadata(s);
    const std::optional<LossScale> r = read_grad_scaler(c, "c");
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->scale, s.scale) << c.metadata[std::string(kGradScalerKey)];
    EXPECT_EQ(r->clean_steps, s.clean_steps);
  }
  c.metadata[std::string(kGradScalerKey)] = R"({"scale": 32768.0, "_growth_tracker": 12})";
  EXPECT_EQ(read_grad_scaler(c, "c")->scale, 32768.0f);  // as torch's json would hold it
}

TEST(GradScaler, MalformedStateIsAnErrorNamingTheSource) {
  for (const char* bad :
       {"", "[]", "{\"scale\": 2}", "{\"_growth_tracker\": 1}",
        "{\"scale\": -1, \"_growth_tracker\": 0}", "{\"scale\": 0, \"_growth_tracker\": 0}",
        "{\"scale\": 1e39, \"_growth_tracker\": 0}", "{\"scale\": 2, \"_growth_tracker\": 2000}",
        "{\"scale\": 2, \"_growth_tracker\": 1.5}"}) {
    Checkpoint c;
    c.metadata[std::string(kGradScalerKey)] = bad;
    const std::string e = error_of([&] { read_grad_scaler(c, "run.safetensors"); });
    EXPECT_NE(e.find("run.safetensors"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find(kGradScalerKey), std::string::npos) << e;
  }
}

}  // namespace
}  // namespace stoker::gpu
