// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/cuda_backend.h"

#include <cudnn.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>

#include "common/error.h"
#include "train/backend_front.h"
#include "train/checkpoint.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/cudnn_net.h"
#include "train/gpu/cupti_activity.h"
#include "train/gpu/cupti_records.h"
#include "train/gpu/device_wait.h"
#include "train/gpu/gpu_memory.h"
#include "train/gpu/gpu_policy.h"
#include "train/gpu/graph_capture.h"
#include "train/gpu/input_staging.h"
#include "train/gpu/step_ring.h"

namespace stoker::gpu {
namespace {

class CudaBackend final : public Backend, public BackendDiagnostics {
 public:
  CudaBackend(const Network& net, const BackendConfig& config)
      : Backend(cuda_caps(), net, config, "backend 'cuda'"), config_(config) {
    try {
      plan(net, config);
    } catch (...) {
      release();  // the destructor does not run for a constructor that throws
      throw;
    }
  }

  ~CudaBackend() override { release(); }

  void plan(const Network& net, const BackendConfig& config) {
    wait_.collective = config.collective;
    STOKER_GPU(cudaSetDevice(config.device));
    // Host waits block on a primitive instead of spinning a core: the loader's decoders need
    // the cores, and the loader is what limits a GPU run.
    STOKER_GPU(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
    STOKER_GPU(cudaStreamCreateWithFlags(compute_.out(), cudaStreamNonBlocking));
    STOKER_GPU(cudaStreamCreateWithFlags(staging_.copy.out(), cudaStreamNonBlocking));
    ring_.create_events();
    staging_.create_events();
    STOKER_GPU(cudaEventCreateWithFlags(wait_.drain.out(),
                                        cudaEventBlockingSync | cudaEventDisableTiming));
    libraries_ = std::make_unique<GpuLibraries>(compute_);
    net_ = std::make_unique<CudnnNet>(net, config, compute_, *libraries_);
    staging_.allocate(stage_bytes(config), config.batch);
    ring_.allocate();
    logits_ = PinnedBuffer(size_t(config.batch * net.num_classes) * sizeof(float));
    InputConversion& conversion = staging_.conversion;
    conversion.src_u8 = config.input.dtype == DType::u8;
    conversion.src_nhwc = config.input.layout == Layout::nhwc;
    conversion.dst_nhwc = net_->nhwc();
    conversion.dtype = net_->dtype();
    conversion.n = config.batch;
    conversion.h = config.height;
    conversion.w = config.width;
    for (int c = 0; c < 3; ++c) {
      conversion.mean[c] = config.input.mean[size_t(c)];
      conversion.inv_std[c] = 1.0f / config.input.std[size_t(c)];
    }
    if (config.record_activity) cupti_ = std::make_unique<CuptiRecorder>(compute_, staging_.copy);
    if (config.collective != nullptr && config.collective->world() > 1)
      wait_.timeout_s = collective_timeout_s();
    sample_memory();
  }

  // Everything the backend holds, in reverse order of creation; safe on a partial plan.
  void release() {
    cupti_.reset();
    // Collective work may wait forever for a failed peer: poll for it (aborting the
    // communicator on an error or timeout) before anything synchronises.
    if (compute_.get() && net_) {
      try {
        wait_stream(compute_);
        if (net_->comm_stream()) wait_stream(net_->comm_stream());
      } catch (const Error&) {
        // Destructors do not throw; the communicator is aborted and its kernels have ended.
      }
    }
    if (compute_.get()) cudaStreamSynchronize(compute_);
    if (staging_.copy.get()) cudaStreamSynchronize(staging_.copy);
    graphs_.destroy();
    net_.reset();
    libraries_.reset();
    // Events and streams go here rather than with their owners (the members' destructors):
    // after the network and libraries that enqueue on them, the streams last.
    ring_.destroy_events();
    staging_.destroy_events();
    wait_.drain.reset();
    staging_.copy.reset();
    compute_.reset();
  }

  std::string describe() const override {
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    return fmt::format(
        "cuda: device {} ({}), CUDA runtime {}.{}, cuDNN {}, {} {}, conv {}, BN {}{}, "
        "workspace {} MiB, {} MiB planned, {}{}{}",
        config_.device, net_->device_name(), runtime / 1000, runtime % 1000 / 10, cudnnGetVersion(),
        precision_name(config_.precision), net_->nhwc() ? "NHWC" : "NCHW", config_.conv_algorithm,
        net_->bn_persistent() ? "persistent" : "spatial",
        net_->bn_add_fused()    ? "+add+ReLU fused"
        : net_->bn_relu_fused() ? "+ReLU fused"
                                : "",
        net_->workspace_bytes() >> 20, net_->device_bytes() >> 20, net_->plans_shared(),
        config_.graph ? ", CUDA Graph" : "", conv_stats_text());
  }

  // --fusions conv_stats (and conv_prologue): on how many convs each runs, and the first
  // refusal's reason.
  std::string conv_stats_text() const {
    if ((config_.fusions & kFuseConvStats) == 0) return "";
    const std::string& why = net_->conv_stats_refusal();
    const std::string prologue =
        (config_.fusions & kFuseConvPrologue) == 0
            ? ""
            : fmt::format(", conv_prologue on {} convs", net_->conv_prologue_fused());
    return fmt::format(", conv_stats on {} convs{} (cuDNN frontend){}", net_->conv_stats_fused(),
                       prologue, why.empty() ? "" : "; first refused: " + why);
  }

  HostMemory host_memory() const override { return pinned_host_memory(); }

  void load(const Checkpoint& ckpt, std::string_view source) override {
    flush_pending();
    wait_stream(compute_);
    net_->set_momentum_flags(load_params(ckpt, net_->network(), source, access()));
    // f16: the loss scale where the checkpoint left it (torch restores GradScaler's state
    // with the optimiser's); a checkpoint without one starts afresh, as a new GradScaler.
    net_->set_loss_scale(read_grad_scaler(ckpt, source).value_or(LossScale{}));
    net_->cast_weights();
    wait_stream(compute_);
  }

  Checkpoint save() const override {
    const_cast<CudaBackend*>(this)->flush_pending();
    wait_stream(compute_);
    Checkpoint out = save_params(net_->network(), access());
    if (config_.precision == Precision::f16)
      out.metadata[std::string(kGradScalerKey)] = grad_scaler_metadata(net_->loss_scale());
    return out;
  }

  Checkpoint gradients() const override {
    const_cast<CudaBackend*>(this)->flush_pending();
    wait_stream(compute_);
    return gradient_params(net_->network(), access());
  }

  // A staging buffer holds a host batch in the input format, or one a device producer wrote
  // in the network's own dtype (device_stage), whichever is larger.
  size_t stage_bytes(const BackendConfig& c) const {
    return size_t(c.batch * 3 * c.height * c.width) *
           std::max(c.input.element_bytes(), dtype_bytes(net_->dtype()));
  }

  DeviceStage device_stage() override {
    return staging_.device_stage(net_->dtype(), net_->nhwc() ? Layout::nhwc : Layout::nchw);
  }

  DeviceProducer device_producer() const override {
    return {config_.device, [this](void* event) { wait_event(static_cast<cudaEvent_t>(event)); }};
  }

  void stage_impl(const HostBatch& batch) override { staging_.stage(batch, config_, wait_); }

  void release_input() override { staging_.release_input(wait_); }

  void forward_backward() override {
    flush_pending();
    if (ring_.begun - ring_.collected >= kRing)
      fail("cuda backend: {} steps not collected; call collect() at least every {} steps",
           ring_.begun - ring_.collected, kRing);
    ring_.current = size_t(ring_.begun % kRing);
    ++ring_.begun;
    const auto begin = std::chrono::steady_clock::now();
    StepSlot& slot = ring_.now();
    slot.updated = false;
    slot.graphed = false;
    slot.stage = staging_.staged_index;
    record(kBegin);
    if (cupti_) {
      step_marker(compute_);
      marker_steps_.push_back(ring_.begun - 1);
    }
    staging_.consume(*net_, config_, compute_);
    record(kStaged);
    if (config_.graph) {
      pending_ = true;  // run by update(), as graphs once warm, or by flush_pending()
    } else {
      run_forward_backward();
    }
    slot.enqueue_seconds = since(begin);  // update() adds its own
  }

  void update(const SgdConfig& sgd, float lr) override {
    if (ring_.begun == 0 || ring_.now().updated)
      fail("cuda backend: update() without a forward_backward() before it");
    enqueue_update_ = std::chrono::steady_clock::now();
    STOKER_CHECK(!sgd.nesterov || (sgd.momentum > 0 && sgd.dampening == 0));  // torch's rule
    if (sgd.optimizer != Optimizer::sgd)
      fail(
          "cuda backend: optimizer {} is not offered on cuda yet (its update runs on the "
          "device, SGD only); use --optimizer sgd or --backend cpu",
          optimizer_name(sgd.optimizer));
    SgdHyper& h = ring_.hyper.as<SgdHyper>()[ring_.current];
    h = SgdHyper{lr,
                 sgd.momentum,
                 sgd.dampening,
                 sgd.weight_decay,
                 sgd.nesterov ? 1 : 0,
                 sgd.decay_bn_and_bias ? 1 : 0};
    STOKER_GPU(
        cudaMemcpyAsync(net_->hyper_device(), &h, sizeof(h), cudaMemcpyHostToDevice, compute_));
    if (pending_) {
      pending_ = false;
      if (!graphs_.graphs[0].get() && graphs_.eager_steps >= kWarmSteps) capture();
      if (graphs_.graphs[0].get()) {
        run_graphs();
        return;
      }
      ++graphs_.eager_steps;
      run_forward_backward();
    }
    net_->update();
    copy_status(true);
    record(kUpdated);
    finish_enqueue();
  }

  std::vector<StepResult> collect() override {
    flush_pending();
    std::vector<StepResult> out;
    out.reserve(size_t(ring_.begun - ring_.collected));
    const auto seconds = [](cudaEvent_t a, cudaEvent_t b) {
      float ms = 0;
      STOKER_GPU(cudaEventElapsedTime(&ms, a, b));
      return double(ms) * 1e-3;
    };
    int64_t& collected = ring_.collected;
    for (; collected < ring_.begun; ++collected) {
      const size_t s = size_t(collected % kRing);
      const StepSlot& slot = ring_.slots[s];
      auto& e = slot.events;
      wait_event(slot.updated ? e[kUpdated] : e[kBackward]);
      const StepStatus& st = ring_.status.as<StepStatus>()[s];
      StepResult r;
      r.loss = st.loss;
      r.skipped = slot.updated && st.skipped != 0;
      // The batch's copy on the copy stream (before this step began, overlapping the previous
      // one) plus its conversion on the compute stream: backend.h's definition of stage.
      const auto& copy = staging_.copy_span(slot.stage);
      r.times.stage = seconds(copy[0], copy[1]) + seconds(e[kBegin], e[kStaged]);
      r.times.forward = seconds(e[kStaged], e[kForward]);
      r.times.backward = seconds(e[kForward], e[kBackward]);
      r.times.update = slot.updated ? seconds(e[kBackward], e[kUpdated]) : 0;
      r.times.stage_compute = seconds(e[kBegin], e[kStaged]);
      // The device's step: from its start to the next step's start (the newest: its end), so
      // that a rate is the device's, with the host's delays between steps in it.
      const cudaEvent_t end = collected + 1 < ring_.begun
                                  ? ring_.slots[size_t((collected + 1) % kRing)].events[kBegin]
                                  : (slot.updated ? e[kUpdated] : e[kBackward]);
      if (collected + 1 < ring_.begun) wait_event(end);
      r.times.wall = seconds(e[kBegin], end);
      r.host_enqueue = slot.enqueue_seconds;
      out.push_back(r);
    }
    sample_memory();
    return out;
  }

  void forward_eval() override {
    flush_pending();
    staging_.consume(*net_, config_, compute_);
    net_->forward(false);
  }

  std::span<const float> logits() override {
    flush_pending();
    STOKER_GPU(cudaMemcpyAsync(logits_.get(), net_->logits_device(), logits_.bytes(),
                               cudaMemcpyDeviceToHost, compute_));
    wait_stream(compute_);
    return {logits_.as<const float>(), logits_.bytes() / sizeof(float)};
  }

  std::vector<ActivityRecord> take_activity() override {
    if (!cupti_) return {};
    flush_pending();
    // Every stream that ran recorded work, so that CUPTI's buffers hold complete records.
    wait_stream(compute_);
    if (net_->comm_stream()) wait_stream(net_->comm_stream());
    wait_stream(staging_.copy);
    std::vector<ActivityRecord> records = cupti_->take();
    const size_t used = assign_steps(records, marker_steps_);
    marker_steps_.erase(marker_steps_.begin(), marker_steps_.begin() + ptrdiff_t(used));
    return records;
  }

  BackendDiagnostics& diagnostics() override { return *this; }

  std::vector<ConvChoice> algorithms() const override { return net_->choices(); }

  DeviceReport device_report() const override {
    DeviceReport r;
    r.planned_bytes = net_->device_bytes();
    r.peak_in_use_bytes = peak_in_use_;
    r.total_bytes = device_total_;
    r.activity_lost = cupti_ ? cupti_->dropped() : 0;
    r.name = net_->device_name();
    return r;
  }

  // A new input shape (size schedules, evaluation at its own size): the weights and momentum
  // move through save()/load() into a CudnnNet planned for it, whose cuDNN algorithms are
  // chosen for the new shapes (measured ones come from the process-wide cache, keyed by
  // shape); the staging buffers follow, and a CUDA Graph is captured afresh after kWarmSteps
  // eager steps. Steps in flight keep their events and are collected as before. Under f16
  // the loss scale carries over (save() writes it, load() restores it).
  void reshape_impl(int64_t height, int64_t width) override {
    const Checkpoint state = save();  // runs a pending graph step, waits for the device
    wait_stream(staging_.copy);
    BackendConfig c = config_;
    c.height = height;
    c.width = width;
    const Network net = net_->network();
    graphs_.destroy();
    graphs_.eager_steps = 0;
    net_.reset();  // the old shape's device memory first: both may not fit
    net_ = std::make_unique<CudnnNet>(net, c, compute_, *libraries_);
    for (DeviceBuffer& b : staging_.images) b = DeviceBuffer(stage_bytes(c));
    staging_.staged = -1;
    staging_.device_slot = false;
    staging_.conversion.dst_nhwc = net_->nhwc();
    staging_.conversion.h = height;
    staging_.conversion.w = width;
    config_ = c;
    load(state, "the state before a reshape");
  }

  std::vector<float> debug_tensor(int id, bool gradient) override {
    flush_pending();
    wait_stream(compute_);
    return net_->debug_tensor(id, gradient);
  }

 private:
  void record(StepEvent e) { STOKER_GPU(cudaEventRecord(ring_.now().events[e], compute_)); }

  // Host waits (device_wait.h): polling the collective under data parallelism.
  void wait_event(cudaEvent_t event) const { wait_.wait_event(event); }
  void wait_stream(cudaStream_t stream) const { wait_.wait_stream(stream); }

  // Device memory in use now (the whole device), kept as the high-water mark.
  void sample_memory() {
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return;
    device_total_ = total;
    peak_in_use_ = std::max(peak_in_use_, total - free);
  }

  void run_forward_backward() {
    net_->count_batch();
    net_->forward(true);
    record(kForward);
    net_->loss_and_backward();
    copy_status(false);
    record(kBackward);
  }

  // The step as three graph launches with the step's events between them on the stream, so
  // that a graph step's forward, backward and update are timed by the device as an eager
  // step's are (an event recorded inside a capture would be baked into the graph, one event
  // for every replay).
  void run_graphs() {
    net_->count_batch();
    STOKER_GPU(cudaGraphLaunch(graphs_.graphs[0], compute_));
    record(kForward);
    STOKER_GPU(cudaGraphLaunch(graphs_.graphs[1], compute_));
    record(kBackward);
    STOKER_GPU(cudaGraphLaunch(graphs_.graphs[2], compute_));
    ring_.now().graphed = true;
    copy_status(true);
    record(kUpdated);
    finish_enqueue();
  }

  void finish_enqueue() {
    ring_.now().updated = true;
    ring_.now().enqueue_seconds += since(enqueue_update_);
  }
  static double since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }

  // The step's loss (and, after an update, whether it was skipped) into the pinned ring.
  void copy_status(bool with_skipped) {
    StepStatus* st = ring_.status.as<StepStatus>() + ring_.current;
    STOKER_GPU(cudaMemcpyAsync(st, net_->loss_device(),
                               with_skipped ? sizeof(StepStatus) : sizeof(float),
                               cudaMemcpyDeviceToHost, compute_));
  }

  // A graph step whose update() never came: run its forward and backward eagerly now.
  void flush_pending() {
    if (!pending_) return;
    pending_ = false;
    run_forward_backward();
  }

  // Forward, backward and update of the current shapes as three CUDA Graphs (they read the
  // converted input, labels and hyper-parameters from fixed device memory).
  void capture() {
    const std::array<std::function<void()>, 3> parts = {[this] { net_->forward(true); },
                                                        [this] { net_->loss_and_backward(); },
                                                        [this] { net_->update(); }};
    graphs_.capture(compute_, parts);
  }

  BackendConfig config_;
  StreamHandle compute_;
  std::unique_ptr<GpuLibraries> libraries_;  // kept across reshapes, outlives net_
  std::unique_ptr<CudnnNet> net_;
  InputStaging staging_;  // the copy stream and the two staging buffers
  StepRing ring_;         // the steps begun and not yet collected
  PinnedBuffer logits_;
  bool pending_ = false;  // a graph step's forward and backward wait for its update()
  StepGraphs graphs_;
  // When update() began: its host time is added to the step's enqueue time.
  std::chrono::steady_clock::time_point enqueue_update_{};
  std::unique_ptr<CuptiRecorder> cupti_;
  std::vector<int64_t> marker_steps_;  // steps whose marker CUPTI has not returned yet
  DeviceWait wait_;
  size_t peak_in_use_ = 0, device_total_ = 0;

  // The checkpoint walk's hooks (backend_front.h): the f32 masters are in torch's layout
  // already, so each is one synchronous copy.
  ParamAccess access() const {
    ParamAccess a;
    a.count = [this](size_t i) { return &net_->param(int(i)).count; };
    a.write = [this](size_t i, ParamPart part, std::span<const float> values) {
      GpuParam& g = net_->param(int(i));
      net_->upload(part == ParamPart::value ? g.value.get() : g.momentum.get(), values.data(),
                   values.size() * sizeof(float));
    };
    a.read = [this](size_t i, ParamPart part) {
      const GpuParam& g = net_->param(int(i));
      if (part == ParamPart::gradient) return download(g.grad, numel(net_->network().params[i]));
      return download(part == ParamPart::value ? g.value : g.momentum);
    };
    a.has_momentum = [this](size_t i) { return net_->has_momentum(int(i)); };
    return a;
  }
  std::vector<float> download(const DeviceBuffer& b) const {
    return download(b.as<const float>(), int64_t(b.bytes() / sizeof(float)));
  }
  std::vector<float> download(const float* device, int64_t n) const {
    std::vector<float> v(static_cast<size_t>(n));
    net_->download(v.data(), device, v.size() * sizeof(float));
    return v;
  }
};

}  // namespace

BackendCaps cuda_caps() {
  return {.device = true,
          .asynchronous = true,
          .pinned_host_memory = true,
          .device_input = true,
          .activity_records = true,  // CUPTI
          .fusions = kFuseBnRelu | kFuseBnAddRelu | kFuseConvStats | kFuseConvPrologue,
          .precisions = precision_bit(Precision::f32) | precision_bit(Precision::tf32) |
                        precision_bit(Precision::f16) | precision_bit(Precision::bf16)};
}

std::unique_ptr<Backend> make_cuda_backend(const Network& net, const BackendConfig& config) {
  const std::string reason = device_unavailable_reason(config.device);
  if (!reason.empty()) fail("backend 'cuda': {}", reason);
  cudnn_conv_policy(config.conv_algorithm);  // a clear error before any device work
  // Data parallelism: the gradients go through the collective in device memory (NCCL,
  // train/parallel/collective_nccl.h). f16's dynamic loss scale would need every rank to agree on
  // an overflow before the update; that agreement does not exist yet.
  if (config.collective != nullptr && config.collective->world() > 1 &&
      config.precision == Precision::f16)
    fail(
        "backend 'cuda': --precision f16 is not offered with data-parallel training ({}) yet "
        "(the ranks would not agree on a loss-scale overflow); use bf16 or f32",
        config.collective->describe());
  if (config.sync_bn) fail("backend 'cuda': --sync-bn is not offered on cuda yet");
  if (config.precision == Precision::bf16 || config.precision == Precision::tf32) {
    int major = 0;
    STOKER_GPU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, config.device));
    if (major < 8)
      fail("backend 'cuda': {} needs compute capability 8.0 or later (Ampere); device {} is {}.x",
           precision_name(config.precision), config.device, major);
  }
  return std::make_unique<CudaBackend>(net, config);
}

}  // namespace stoker::gpu
