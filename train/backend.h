// SPDX-License-Identifier: Apache-2.0
// The narrow interface between the training loop and a compute backend: oneDNN on the CPU
// (train/cpu), cuDNN on a GPU (train/gpu). A backend is planned once for one network, batch
// size and image size; it owns the parameters, their gradients and the momentum buffers in
// whatever layout it likes, and converts to torchvision's plain layout only at its edges
// (load, save, gradients). The loop, the schedule, the metrics and the checkpoints know
// nothing else about it. Not thread-safe: one call at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/error.h"
#include "models/network.h"
#include "train/checkpoint.h"
#include "train/sgd.h"

namespace stoker {

enum class Precision { f32, bf16 };
inline std::string_view precision_name(Precision p) {
  return p == Precision::bf16 ? "bf16" : "f32";
}
inline Precision parse_precision(std::string_view name) {
  if (name == "f32") return Precision::f32;
  if (name == "bf16") return Precision::bf16;
  fail("unknown precision '{}': expected f32 or bf16", name);
}

// What a backend is built for. Images arrive as the loader collates them: f32, normalised,
// NCHW or NHWC.
struct BackendConfig {
  int64_t batch = 0;
  int64_t height = 0, width = 0;
  bool nhwc = false;  // layout of the images given to the step calls
  Precision precision = Precision::f32;
  float label_smoothing = 0.0f;
  int threads = 0;  // CPU: compute threads (0: the runtime's default); GPU: ignored
  // Convolution algorithm: "direct", "winograd" (3x3 stride 1; others direct) or "auto"
  // (the library's choice).
  std::string conv_algorithm = "auto";
};

// Wall-clock split of the last call, seconds. A backend that runs asynchronously (a GPU)
// reports the time to completion of each phase, not of its launch.
struct StepTimes {
  double forward = 0;
  double backward = 0;
  double update = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // One line for logs and the JSON summary: engine, precision, threads or device.
  virtual std::string describe() const = 0;

  // Parameters, buffers and (when present) momentum buffers from a checkpoint that
  // check_checkpoint accepts for this network; a trainable parameter without a momentum
  // buffer starts without one (as a fresh torch optimiser). stoker::Error naming `source`.
  virtual void load(const Checkpoint& ckpt, std::string_view source) = 0;
  // The model in state_dict order, then "optim.momentum.<key>" for each parameter that has a
  // buffer. Plain torch layout, f32 (num_batches_tracked i64).
  virtual Checkpoint save() const = 0;
  // The trainable parameters' gradients from the last forward_backward, under their keys.
  virtual Checkpoint gradients() const = 0;

  // Training-mode forward (batch statistics; running statistics and num_batches_tracked
  // updated), mean softmax cross-entropy with the configured label smoothing, backward to
  // every trainable parameter. Returns the loss. stoker::Error for a label outside
  // [0, classes).
  virtual float forward_backward(const float* images, const int32_t* labels) = 0;
  // One SGD step on every trainable parameter with the last gradients.
  virtual void update(const SgdConfig& sgd, float lr) = 0;
  // Eval-mode forward (running statistics, nothing updated).
  virtual void forward_eval(const float* images) = 0;
  // batch x classes logits of the last forward, either mode.
  virtual std::span<const float> logits() const = 0;

  virtual const StepTimes& last_times() const = 0;
};

// The backends this build has, by name: "cpu" (oneDNN) when built with it. stoker::Error
// naming the backend and why when it is unknown, not built in, or cannot run here (no
// device, no bf16 support).
std::unique_ptr<Backend> make_backend(std::string_view name, const Network& net,
                                      const BackendConfig& config);

}  // namespace stoker
