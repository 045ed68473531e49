// SPDX-License-Identifier: Apache-2.0
// The GPU backend's numeric and planning rules that need no device, kept apart so that tests
// run them on any machine: which cuDNN math type a precision asks for and which of cuDNN's
// ranked results it accepts, whether a non-finite gradient skips a step, which planning
// failures allow a slower fallback, and the f16 loss scale's place in a checkpoint.
// Header-only cuDNN types; no cuDNN call here.
#pragma once

#include <cudnn.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "train/backend.h"
#include "train/checkpoint.h"
#include "train/gpu/step_math.h"

namespace stoker::gpu {

// Which dtype and layout a config computes in (auto: NHWC for f16/bf16, NCHW for f32/tf32).
DType compute_dtype(Precision p);
bool compute_nhwc(const BackendConfig& config);

// The math type a convolution descriptor is planned with (torch's choice for each mode):
//   f32   CUDNN_FMA_MATH: no tensor cores, no TF32;
//   tf32  CUDNN_DEFAULT_MATH: tensor cores allowed, TF32 on Ampere and later, never a
//         conversion of fp32 data to fp16 (CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION would allow
//         that, and unscaled fp32 gradients would underflow);
//   f16 / bf16  CUDNN_TENSOR_OP_MATH.
cudnnMathType_t conv_math_type(Precision p);

// Whether an algorithm cuDNN ranked with math type `returned` may run under a descriptor
// planned with `planned`: f32 takes FMA only (a tensor-op result would be TF32); tf32 refuses
// ALLOW_CONVERSION (fp16 conversion); f16/bf16 take what cuDNN offers.
bool math_type_allowed(cudnnMathType_t planned, cudnnMathType_t returned);

// Whether a non-finite gradient skips the step. Only f16's dynamic loss scale reads it as "the
// scale was too high" (torch.cuda.amp.GradScaler skips that step and halves the scale); f32,
// TF32 and bf16 apply the step as torch.optim.SGD and the CPU backend do, and the loop stops
// on the non-finite loss that follows.
bool skips_nonfinite_step(Precision p);

// Whether a planning step that failed with `status` may be retried with a slower but more
// widely supported configuration (fused BN+ReLU -> persistent BN -> plain BN): only when cuDNN
// said the configuration is not supported. Any other failure (a bad parameter, an execution
// failure, a sticky CUDA error, memory) is reported as it came.
bool planning_fallback_allowed(cudnnStatus_t status);

// The stoker::Error STOKER_GPU throws for a failed cuDNN call: the message as ever, and the
// status, so that planning can tell "not supported" from everything else.
class CudnnStatusError : public Error {
 public:
  CudnnStatusError(const std::string& what, cudnnStatus_t status) : Error(what), status_(status) {}
  cudnnStatus_t status() const { return status_; }

 private:
  cudnnStatus_t status_;
};

// Runs `attempt` until it returns. When it throws a CudnnStatusError that
// planning_fallback_allowed accepts, `fall_back` moves to the next configuration and says
// which ("plain batch norm"; empty: none is left) and `attempt` runs again. Any other error,
// or a refusal with nothing left to try, ends it with stoker::Error "<what>: <the first
// failure's message>" (later failures are often follow-ons of the first), naming the
// configurations tried after it.
void run_with_fallbacks(std::string_view what, const std::function<void()>& attempt,
                        const std::function<std::string()>& fall_back);

// Waits until ready() holds, calling poll() (which may throw) before each sleep of `interval`;
// false once `timeout_s` seconds have passed without it. For host waits on device work that a
// collective may hold forever (a failed peer): NCCL's asynchronous error is polled instead of
// blocking in cudaEventSynchronize, as torch's c10d watchdog does.
bool wait_polling(const std::function<bool()>& ready, const std::function<void()>& poll,
                  double timeout_s, std::chrono::microseconds interval);
// The seconds a data-parallel GPU backend waits on its streams before it aborts the
// communicator and fails: STOKER_NCCL_TIMEOUT_S when set to a positive number, else 600
// (torch's default for NCCL process groups is 10 minutes). stoker::Error for a bad value.
double collective_timeout_s();

// Diagnostics of the batch-norm fusion and the shared activation gradients, for bisecting a
// numerical difference on a device: STOKER_CUDNN_BN_FUSION caps the fusion level (0 plain
// calls, 1 Ex calls unfused, 2 BN + ReLU, 3 BN + add + ReLU, 4 also the convolutions' batch-norm
// statistics where --fusions asks for conv_stats, the default; the words plain, ex, relu,
// add-relu, conv-stats too), STOKER_GPU_KEEP_GRADIENTS=1 gives every activation gradient its own
// memory. stoker::Error for a value outside these.
int bn_fusion_cap();
bool keep_gradients_from_env();

// Where a training batch norm's planning starts (trial_step falls back level by level from
// there, to the plain calls): in NHWC (compute_nhwc) at every precision on cuDNN's persistent
// kernels through the Ex calls, fused up to level 3 (4 where config.fusions asks for
// conv_stats), capped by `cap` (bn_fusion_cap's levels); in NCHW the plain calls. f32 and tf32
// included: torch's cudnn_batch_norm asks the Ex call for CUDNN_BATCHNORM_SPATIAL_PERSISTENT
// for every channels_last input in training, and the plain calls in NHWC run cuDNN's legacy
// kernels (tf32 NHWC trained at 265 img/s on the H200 of 2026-11-26, 0.09x torch).
struct BnStart {
  bool persistent = false;  // CUDNN_BATCHNORM_SPATIAL_PERSISTENT, else CUDNN_BATCHNORM_SPATIAL
  int level = 0;
};
BnStart bn_start(const BackendConfig& config, int cap);

// The dynamic loss scale's state in a checkpoint: metadata key "optim.grad_scaler", a JSON
// object with torch.cuda.amp.GradScaler.state_dict()'s "scale" and "_growth_tracker" (the
// other fields are the fixed defaults of step_math.h's LossScale).
inline constexpr std::string_view kGradScalerKey = "optim.grad_scaler";
std::string grad_scaler_metadata(const LossScale& s);
// The state stored in `ckpt`, or nullopt when it has none (a checkpoint of another precision
// or backend: the scale starts afresh, as a new GradScaler). stoker::Error naming `source`
// when the value is malformed or not a positive finite scale.
std::optional<LossScale> read_grad_scaler(const Checkpoint& ckpt, std::string_view source);

}  // namespace stoker::gpu
