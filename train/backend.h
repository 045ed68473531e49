// SPDX-License-Identifier: Apache-2.0
// The narrow interface between the training loop and a compute backend: oneDNN on the CPU
// (train/cpu), cuDNN + cuBLAS on a GPU (train/gpu). A backend is planned for one network,
// batch size, image size and input format (reshape() re-plans for another image size); it owns the
// parameters, their gradients and the momentum buffers in whatever layout it likes, and converts to
// torchvision's plain layout only at its edges (load, save, gradients). The loop, the schedule, the
// metrics and the checkpoints know nothing else about it.
//
// Made for devices: a step is stage -> forward_backward -> update, and none of these waits
// for the device. A GPU copies the staged batch on its own stream while the previous step
// computes; the loss, logits and phase times are read back only when asked (collect,
// logits), so the host runs ahead and the stream never idles for a host round trip.
// Each backend declares what it can do (BackendCaps), and callers read that, never its name.
// Not thread-safe: one call at a time, from one thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "augment/imagenet.h"
#include "common/dtype.h"
#include "common/error.h"
#include "loader/host_memory.h"
#include "models/network.h"
#include "train/activity.h"
#include "train/checkpoint.h"
#include "train/collective.h"
#include "train/conv_algorithm.h"
#include "train/lowering.h"
#include "train/sgd.h"

namespace stoker {

// Arithmetic of the forward and backward passes. Parameters, master weights and the
// optimiser state are f32 in every mode.
//   f32   fp32 everywhere (a GPU keeps TF32 off)
//   tf32  fp32 storage, TF32 tensor-core math in convolutions and GEMMs (GPU only)
//   f16   mixed precision: fp16 activations and weights copies, dynamic loss scaling (GPU)
//   bf16  mixed precision: bf16 activations and weight copies, no loss scaling
enum class Precision { f32, tf32, f16, bf16 };
std::string_view precision_name(Precision p);
// stoker::Error listing the valid names.
Precision parse_precision(std::string_view name);

// What the loop hands to stage(): the loader's own output format. dtype f32: normalised
// already; u8: raw pixels, the backend normalises ((x / 255 - mean) / std per channel).
struct InputSpec {
  DType dtype = DType::f32;                   // u8 or f32
  Layout layout = Layout::nchw;               // [batch, 3, h, w] or [batch, h, w, 3]
  std::array<float, 3> mean = kImagenetMean;  // u8 only, as torchvision's
  std::array<float, 3> std = kImagenetStd;
  size_t element_bytes() const { return dtype_bytes(dtype); }
};

// Layout of the activations inside the backend (not of the input).
enum class ComputeLayout { automatic, nchw, nhwc };
std::string_view compute_layout_name(ComputeLayout l);
ComputeLayout parse_compute_layout(std::string_view name);  // "auto", "nchw", "nhwc"

// What a backend is built for.
struct BackendConfig {
  int64_t batch = 0;
  int64_t height = 0, width = 0;
  InputSpec input;
  ComputeLayout layout = ComputeLayout::automatic;
  Precision precision = Precision::f32;
  float label_smoothing = 0.0f;
  int threads = 0;  // CPU: compute threads (0: the runtime's default); GPU: ignored
  int device = 0;   // GPU: CUDA device index; CPU: ignored
  // Convolution algorithm policy, one vocabulary for every backend (train/conv_algorithm.h).
  ConvAlgorithm conv_algorithm;
  size_t workspace_limit = size_t(1) << 30;  // bytes a convolution may borrow (GPU)
  bool record_activity = false;  // record every kernel / primitive interval (activity.h)
  bool graph = false;            // GPU: capture the step into a CUDA Graph once shapes fix
  // GPU: every activation gradient in memory of its own, so that debug_tensor shows each one
  // after a step (the conformance suite's layer-by-layer check). Otherwise gradients whose
  // lifetimes in the backward do not overlap share memory (train/gpu/grad_slots.h), and
  // debug_tensor shows only those not overwritten later in the backward.
  bool keep_activation_gradients = false;
  // Data parallelism (train/collective.h). With a collective of world > 1, forward_backward
  // averages the gradients over the ranks: buckets of about `bucket_bytes` are all-reduced
  // as soon as the backward has finished them, overlapping the rest of the backward, and
  // update() waits for them. Null: one process. Not owned; outlives the backend.
  Collective* collective = nullptr;
  size_t bucket_bytes = size_t(25) << 20;
  // Batch-norm statistics over the global batch (every rank's), not this rank's: forward
  // all-reduces the per-channel sums, backward the two per-channel gradient sums.
  bool sync_bn = false;
  // Fusion bits a plan may use, of those the backend runs (BackendCaps::fusions): the
  // patterns of train/lowering.h (--fusions). Tests plan the unfused network (0) to compare.
  uint32_t fusions = kDefaultFusions;
};

// Seconds each phase of one step took on the compute engine. A GPU measures with events on
// its stream, a CPU with the wall clock around the work.
struct StepTimes {
  // Host-to-device copy and input conversion (0 on a CPU fed f32). A GPU copies on its own
  // stream while the previous step computes: this is the copy's own duration plus the
  // conversion's, not wall time the step waited.
  double stage = 0;
  double forward = 0;
  double backward = 0;
  double update = 0;
  // Data parallelism: seconds the host waited after the backward for the gradient
  // all-reduces to finish (the communication not hidden behind the backward).
  double allreduce_wait = 0;
  // The part of `stage` on the compute engine's own timeline, which the step accounting adds
  // up (train/step_account.h): on a GPU the compute stream's share, from the step's start
  // to its input conversion's end (its wait for the copy included), not the copy on the
  // copy stream, which overlaps the previous step; on a CPU all of `stage`.
  double stage_compute = 0;
  // An asynchronous backend's own clock for the step's whole duration, from its start on the
  // compute engine to the next step's start (the newest step: to its end), so that a rate
  // comes from the device's time, not the host's enqueue time. 0: not measured (a CPU: the
  // loop's host window is the engine's).
  double wall = 0;
};

// The algorithm one convolution pass runs, as planned (heuristic, measured or fixed).
struct ConvChoice {
  std::string layer;      // the conv's torchvision name, e.g. "layer1.0.conv2"
  std::string pass;       // "forward", "backward_data" or "backward_weights"
  std::string algorithm;  // the library's name for it
  size_t workspace_bytes = 0;
  double measured_ms = 0;  // when chosen by measurement ("exhaustive"), else 0
};

// One finished training step as collect() reports it.
struct StepResult {
  float loss = 0;
  StepTimes times;
  bool skipped = false;  // f16: the update was skipped (overflow) and the loss scale lowered
  // Host seconds the step's forward_backward() and update() calls took. On a device that runs
  // behind the host (cuda) this is the enqueue time, not the step's: `times` are the device's
  // own (events on its stream). 0 where the backend does not measure it.
  double host_enqueue = 0;
};

// A batch on the host, as the loader or a synthetic feed produced it: `count` images in
// the config's InputSpec, and their labels. Must stay unchanged until release_input().
struct HostBatch {
  const void* images = nullptr;
  const int32_t* labels = nullptr;
  int64_t count = 0;  // == config.batch
  // The images' height and width when the feed's size changes over a run (a size schedule):
  // the loop reshapes the backend to them before stage(). 0: the configured size.
  int64_t height = 0, width = 0;
  // The images are on the device already, in the slot device_stage() handed out (GPU
  // decode): stage() takes the labels only. `images` is then unused.
  bool on_device = false;
};

// Where a producer on the device (GPU JPEG decode) writes the next batch itself: the slot
// the next stage() takes, in the network's input dtype and layout (count x 3 x h x w, NCHW,
// or NHWC), and the stream (a cudaStream_t) its work must be ordered on. Empty where the
// backend's caps say no device_input.
struct DeviceStage {
  void* images = nullptr;
  void* stream = nullptr;
  DType dtype = DType::f32;  // f32, f16 or bf16
  Layout layout = Layout::nchw;
};

// What a producer on the device needs before its first batch: the device the backend runs on
// (the producer creates its handles and memory there and leaves the thread's current device
// as it found it), and how it waits for device work: the backend's own wait on an event (a
// cudaEvent_t), which under a data-parallel collective polls its asynchronous error and the
// interrupt path (a peer that died mid all-reduce holds the copy stream forever). device -1
// where the backend's caps say no device_input.
struct DeviceProducer {
  int device = -1;
  std::function<void(void* event)> wait;
};

constexpr uint32_t precision_bit(Precision p) {
  return 1u << static_cast<unsigned>(p);
}

// What a backend can do, declared by each implementation (as ggml's device caps and fio's
// engine flags): callers read these, never the backend's name or another hook's empty answer.
// Fixed for the backend's life; backend_caps(name) gives them without making one.
struct BackendCaps {
  // Runs on an accelerator with memory of its own: device_report() fills its figures, a
  // data-parallel run all-reduces in device memory, a rate is checked against its peak.
  bool device = false;
  // Whose clock a step is on. Synchronous (a CPU): the engine works inside the loop's calls,
  // so the host's step windows bound it. Asynchronous (a device): the engine runs behind the
  // host; the backend labels its activity records with its own step count (ActivityRecord::
  // step, 0 for its first forward_backward; by time between step markers, on every stream),
  // and the loop windows each step by the device's own records (activity.h: device_step_gaps).
  bool asynchronous = false;
  // host_memory() pins: the loader's batches are staged by an asynchronous copy.
  bool pinned_host_memory = false;
  // device_stage() and device_producer() serve a producer on the device (GPU decode), which
  // fills the next batch in the backend's own memory.
  bool device_input = false;
  // take_activity() returns the engine's intervals when BackendConfig::record_activity is set.
  bool activity_records = false;
  uint32_t fusions = 0;     // Fusion bits: the patterns a plan may fuse (where the library can)
  uint32_t precisions = 0;  // precision_bit()s offered; make_backend may still refuse one that
                            // this machine lacks (bf16 without native support, say)

  bool fuses(Fusion f) const { return (fusions & f) != 0; }
  bool offers(Precision p) const { return (precisions & precision_bit(p)) != 0; }
};

// What a device backend reports about itself after running, for the JSON summary; a backend
// whose caps say no device reports zeros.
struct DeviceReport {
  size_t planned_bytes = 0;  // device memory the backend allocated while planning
  // The most device memory in use seen (cudaMemGetInfo's total - free, sampled after planning
  // and at every collect(): the whole device, CUDA context and libraries' own included).
  size_t peak_in_use_bytes = 0;
  size_t total_bytes = 0;      // the device's memory
  uint64_t activity_lost = 0;  // activity records lost (dropped or incomplete), when recording
  std::string name;            // the device's name as its driver gives it (cudaDeviceProp::name)
};

// What a backend tells about its own running, for reports, traces and tests: behind one
// accessor (Backend::diagnostics()), so that the training contract stays short.
class BackendDiagnostics {
 public:
  // Kernel (GPU) or primitive (CPU) intervals recorded since the last call, when
  // config.record_activity is set; empty otherwise. Waits for the device.
  virtual std::vector<ActivityRecord> take_activity() = 0;
  // What each convolution ran, for the JSON; empty if the library does not say.
  virtual std::vector<ConvChoice> algorithms() const = 0;
  // Memory and recording figures of a device backend (caps().device); zeros otherwise.
  virtual DeviceReport device_report() const { return {}; }
  // Network tensor `id` (Network::tensors) as the last training forward left it, or with
  // `gradient` the loss's gradient with respect to it from the last backward (loss-scaled
  // under f16), plain NCHW (N x C for the logits) f32: what the conformance suite compares
  // layer by layer. Empty where the backend keeps no copy of its own (fused, computed in
  // place, memory reused since); the default keeps none. For tests and debugging; waits for
  // the device.
  virtual std::vector<float> debug_tensor(int id, bool gradient) {
    (void)id, (void)gradient;
    return {};
  }

 protected:
  ~BackendDiagnostics() = default;
};

// The contract. stage() and reshape() are fronts: they check, once, for every backend, and
// then call the implementation (stage_impl, reshape_impl); planning's front is the
// constructor, which checks the plan before the implementation plans anything.
class Backend {
 public:
  static constexpr int64_t kMaxPendingSteps = 256;  // steps the loop may leave uncollected

  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // What this backend can do (above), as it declared.
  const BackendCaps& caps() const { return caps_; }
  // One line for logs and the JSON summary: engine, precision, layout, threads or device.
  virtual std::string describe() const = 0;
  // How the loader allocates batch memory for this backend (loader/host_memory.h): pinned
  // where caps().pinned_host_memory, the heap otherwise.
  virtual HostMemory host_memory() const = 0;

  // Parameters, buffers and (when present) momentum buffers from a checkpoint that
  // check_checkpoint accepts for this network; a trainable parameter without a momentum
  // buffer starts without one (as a fresh torch optimiser). stoker::Error naming `source`.
  // Waits for the device.
  virtual void load(const Checkpoint& ckpt, std::string_view source) = 0;
  // The model in state_dict order, then "optim.momentum.<key>" for each parameter that has a
  // buffer. Plain torch layout, f32 (num_batches_tracked i64). Waits for the device.
  virtual Checkpoint save() const = 0;
  // The trainable parameters' gradients from the last forward_backward, under their keys
  // (unscaled under f16). Waits for the device.
  virtual Checkpoint gradients() const = 0;

  // The batch the next forward_backward / forward_eval reads. May copy asynchronously (a GPU
  // copies on its own stream, overlapping the step in flight). stoker::Error, before the
  // implementation sees it, unless the batch holds the planned count and every label is in
  // [0, classes) (check_batch).
  void stage(const HostBatch& batch);
  // The slot the next stage() of a HostBatch with on_device takes (above): the producer's work
  // on the returned stream fills it, and stage() follows. Where caps().device_input only.
  virtual DeviceStage device_stage() { return {}; }
  // The device and wait of device_stage()'s producer (above). Where caps().device_input only.
  virtual DeviceProducer device_producer() const { return {}; }
  // Blocks until the memory of the last staged batch may be reused by its owner. The loop
  // calls this before asking its feed for the next batch (the loader reuses the buffer).
  virtual void release_input() = 0;

  // Training-mode forward on the staged batch (batch statistics; running statistics and
  // num_batches_tracked updated), mean softmax cross-entropy with the configured label
  // smoothing, backward to every trainable parameter. Does not wait for the device.
  virtual void forward_backward() = 0;
  // One SGD step on every trainable parameter with the last gradients (skipped on f16
  // overflow). Does not wait for the device.
  virtual void update(const SgdConfig& sgd, float lr) = 0;
  // The training steps (forward_backward [+ update]) finished since the last call, oldest
  // first; waits for those in flight. The loop calls it at least every kMaxPendingSteps.
  virtual std::vector<StepResult> collect() = 0;

  // Eval-mode forward on the staged batch (running statistics, nothing updated).
  virtual void forward_eval() = 0;
  // batch x classes logits of the last forward, either mode. Waits for the device; valid
  // until the next call on the backend.
  virtual std::span<const float> logits() = 0;

  // Re-plans for images of height x width from the next stage() on (a size schedule, or
  // evaluation at its own resolution). Parameters, buffers, momentum and the step count carry
  // over exactly; what depends on the shape is made for the new one (oneDNN primitives and
  // activation memory re-created, cuDNN algorithms chosen per shape, a CUDA Graph captured
  // afresh); the last gradients do not carry over. No-op for the current shape. A step at
  // size A, then B, then A gives what fresh backends at each size give. stoker::Error, with
  // the backend unchanged, when the network cannot take the shape (check_plan); an error
  // while planning leaves the backend unusable (the old plan is freed first, so memory never
  // holds two). Waits for the device.
  void reshape(int64_t height, int64_t width);

  // The diagnostic hooks (BackendDiagnostics above).
  virtual BackendDiagnostics& diagnostics() = 0;

 protected:
  // The front of planning: stoker::Error, starting with `who`, when `net` cannot be planned
  // for `config` (check_plan), before the implementation's constructor plans anything.
  Backend(const BackendCaps& caps, const Network& net, const BackendConfig& config,
          std::string_view who);

  // The implementation of stage(), after its checks.
  virtual void stage_impl(const HostBatch& batch) = 0;
  // The implementation of reshape(), for a shape other than the current one that passed
  // check_plan.
  virtual void reshape_impl(int64_t height, int64_t width) = 0;

 private:
  BackendCaps caps_;
  Network net_;            // what the fronts check against
  BackendConfig planned_;  // its batch and current shape
  std::string who_;
};

// A backend's one name: "gpu", the older name of "cuda", is "cuda" (still accepted,
// deprecated); any other name is returned as given (make_backend judges it).
inline std::string_view backend_name(std::string_view name) {
  return name == "gpu" ? std::string_view("cuda") : name;
}

// The backends this build has, by name (backend_name): "cpu" (oneDNN) and "cuda" (cuDNN +
// cuBLAS) when built with them. stoker::Error naming the backend and why when it is unknown, not
// built in, or cannot run here (no device, no driver, no bf16 support).
std::unique_ptr<Backend> make_backend(std::string_view name, const Network& net,
                                      const BackendConfig& config);
// Names of the backends built in ("cpu", "cuda"), whether or not they can run here.
std::vector<std::string> built_backends();
// What the backend of that name declares it can do (Backend::caps), without making one (no
// device needed). stoker::Error as make_backend's when it is unknown or not built in.
BackendCaps backend_caps(std::string_view name);

}  // namespace stoker
