// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/gpu_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/error.h"

namespace stoker::gpu {

DType compute_dtype(Precision p) {
  switch (p) {
    case Precision::f16:
      return DType::f16;
    case Precision::bf16:
      return DType::bf16;
    default:
      return DType::f32;
  }
}

bool compute_nhwc(const BackendConfig& c) {
  if (c.layout == ComputeLayout::automatic) return compute_dtype(c.precision) != DType::f32;
  return c.layout == ComputeLayout::nhwc;
}

cudnnMathType_t conv_math_type(Precision p) {
  switch (p) {
    case Precision::f32:
      return CUDNN_FMA_MATH;
    case Precision::tf32:
      return CUDNN_DEFAULT_MATH;
    case Precision::f16:
    case Precision::bf16:
      break;
  }
  return CUDNN_TENSOR_OP_MATH;
}

bool math_type_allowed(cudnnMathType_t planned, cudnnMathType_t returned) {
  switch (planned) {
    case CUDNN_FMA_MATH:
      return returned == CUDNN_FMA_MATH;
    case CUDNN_DEFAULT_MATH:
      return returned != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    default:
      return true;
  }
}

bool skips_nonfinite_step(Precision p) {
  return p == Precision::f16;
}

bool planning_fallback_allowed(cudnnStatus_t status) {
  return status == CUDNN_STATUS_NOT_SUPPORTED;
}

void run_with_fallbacks(std::string_view what, const std::function<void()>& attempt,
                        const std::function<std::string()>& fall_back) {
  std::string first, tried;
  for (;;) {
    try {
      attempt();
      return;
    } catch (const Error& e) {
      if (first.empty()) first = e.what();
      const auto* status = dynamic_cast<const CudnnStatusError*>(&e);
      std::string next;
      if (status != nullptr && planning_fallback_allowed(status->status())) next = fall_back();
      if (next.empty()) {
        if (tried.empty()) fail("{}: {}", what, first);
        fail("{}: {} (also with {}; the last: {})", what, first, tried, e.what());
      }
      tried += (tried.empty() ? "" : ", ") + next;
    }
  }
}

bool wait_polling(const std::function<bool()>& ready, const std::function<void()>& poll,
                  double timeout_s, std::chrono::microseconds interval) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_s));
  for (;;) {
    if (ready()) return true;
    poll();
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(interval);
  }
}

double collective_timeout_s() {
  const char* text = std::getenv("STOKER_NCCL_TIMEOUT_S");
  if (text == nullptr || *text == '\0') return 600;
  char* end = nullptr;
  const double s = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(s) || s <= 0)
    fail("STOKER_NCCL_TIMEOUT_S is '{}'; expected a positive number of seconds", text);
  return s;
}

int bn_fusion_cap() {
  const char* text = std::getenv("STOKER_CUDNN_BN_FUSION");
  if (text == nullptr || *text == '\0') return 4;
  static constexpr std::string_view kWords[] = {"plain", "ex", "relu", "add-relu", "conv-stats"};
  for (int i = 0; i < 5; ++i)
    if (text == kWords[i] || text == std::to_string(i)) return i;
  fail(
      "STOKER_CUDNN_BN_FUSION is '{}'; expected plain, ex, relu, add-relu or conv-stats (or "
      "0..4)",
      text);
}

BnStart bn_start(const BackendConfig& config, int cap) {
  if (!compute_nhwc(config)) return {};
  const bool stats = (config.fusions & kFuseConvStats) != 0;
  return {.persistent = true, .level = std::min(stats ? 4 : 3, cap)};
}

bool keep_gradients_from_env() {
  const char* text = std::getenv("STOKER_GPU_KEEP_GRADIENTS");
  if (text == nullptr || *text == '\0' || std::string_view(text) == "0") return false;
  if (std::string_view(text) == "1") return true;
  fail("STOKER_GPU_KEEP_GRADIENTS is '{}'; expected 0 or 1", text);
}

std::string grad_scaler_metadata(const LossScale& s) {
  // %.9g round-trips every float.
  return fmt::format(R"({{"scale": {:.9g}, "_growth_tracker": {}}})", s.scale, s.clean_steps);
}

std::optional<LossScale> read_grad_scaler(const Checkpoint& ckpt, std::string_view source) {
  const auto it = ckpt.metadata.find(std::string(kGradScalerKey));
  if (it == ckpt.metadata.end()) return std::nullopt;
  const auto bad = [&](std::string_view why) {
    fail(
        "{}: metadata '{}' is '{}': {}; expected {{\"scale\": <positive float>, "
        "\"_growth_tracker\": <0..{}>}}",
        source, kGradScalerKey, it->second, why, LossScale::kGrowthInterval - 1);
  };
  const nlohmann::json j = nlohmann::json::parse(it->second, nullptr, false);
  if (j.is_discarded() || !j.is_object()) bad("not a JSON object");
  if (!j.contains("scale") || !j["scale"].is_number()) bad("no numeric \"scale\"");
  if (!j.contains("_growth_tracker") || !j["_growth_tracker"].is_number_integer())
    bad("no integer \"_growth_tracker\"");
  LossScale s;
  const double scale = j["scale"].get<double>();
  const int64_t tracker = j["_growth_tracker"].get<int64_t>();
  if (!std::isfinite(scale) || scale <= 0 || scale > 3.4e38)
    bad("the scale is not a positive float");
  if (tracker < 0 || tracker >= LossScale::kGrowthInterval)
    bad("the growth tracker is out of range");
  s.scale = float(scale);
  s.clean_steps = int32_t(tracker);
  return s;
}

}  // namespace stoker::gpu
