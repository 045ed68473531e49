// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/cuda_backend.h"

#include <cudnn.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <functional>
#include <utility>

#include "common/error.h"
#include "train/backend_front.h"
#include "train/checkpoint.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/cudnn_net.h"
#include "train/gpu/cupti_activity.h"
#include "train/gpu/cupti_records.h"
#include "train/gpu/gpu_memory.h"
#include "train/gpu/gpu_policy.h"

namespace stoker::gpu {
namespace {

constexpr int64_t kRing = Backend::kMaxPendingSteps;
// Staged batches whose copy times are kept: a step reads its batch's, and at most kRing steps
// are uncollected plus one batch staged ahead.
constexpr int64_t kStageRing = kRing + 2;
// Eager steps before a CUDA Graph is captured: the libraries' lazy set-up (handles, kernels
// loaded on first use) happens outside the capture.
constexpr int kWarmSteps = 2;

// Events of one step on the compute stream.
enum StepEvent { kBegin, kStaged, kForward, kBackward, kUpdated, kEvents };

struct StepStatus {  // written by the device (async copies), read after the step's events
  float loss = 0;
  int32_t skipped = 0;
};

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
    STOKER_GPU(cudaSetDevice(config.device));
    // Host waits block on a primitive instead of spinning a core: the loader's decoders need
    // the cores, and the loader is what limits a GPU run.
    STOKER_GPU(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
    STOKER_GPU(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
    STOKER_GPU(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
    for (auto& step : events_)
      for (cudaEvent_t& e : step) STOKER_GPU(cudaEventCreateWithFlags(&e, cudaEventBlockingSync));
    for (auto& pair : copy_events_)
      for (cudaEvent_t& e : pair) STOKER_GPU(cudaEventCreateWithFlags(&e, cudaEventBlockingSync));
    constexpr unsigned kSyncOnly = cudaEventBlockingSync | cudaEventDisableTiming;
    for (int s = 0; s < 2; ++s) {
      STOKER_GPU(cudaEventCreateWithFlags(&copied_[size_t(s)], kSyncOnly));
      STOKER_GPU(cudaEventCreateWithFlags(&consumed_[size_t(s)], kSyncOnly));
    }
    STOKER_GPU(cudaEventCreateWithFlags(&drain_, kSyncOnly));
    libraries_ = std::make_unique<GpuLibraries>(compute_);
    net_ = std::make_unique<CudnnNet>(net, config, compute_, *libraries_);
    for (int s = 0; s < 2; ++s) {
      stage_images_[size_t(s)] = DeviceBuffer(stage_bytes(config));
      stage_labels_[size_t(s)] = DeviceBuffer(size_t(config.batch) * sizeof(int32_t));
      // Labels go through pinned memory: a pageable copy would be staged synchronously.
      pinned_labels_[size_t(s)] = PinnedBuffer(size_t(config.batch) * sizeof(int32_t));
    }
    ring_ = PinnedBuffer(size_t(kRing) * sizeof(StepStatus));
    hyper_ring_ = PinnedBuffer(size_t(kRing) * sizeof(SgdHyper));
    logits_ = PinnedBuffer(size_t(config.batch * net.num_classes) * sizeof(float));
    conversion_.src_u8 = config.input.dtype == DType::u8;
    conversion_.src_nhwc = config.input.layout == Layout::nhwc;
    conversion_.dst_nhwc = net_->nhwc();
    conversion_.dtype = net_->dtype();
    conversion_.n = config.batch;
    conversion_.h = config.height;
    conversion_.w = config.width;
    for (int c = 0; c < 3; ++c) {
      conversion_.mean[c] = config.input.mean[size_t(c)];
      conversion_.inv_std[c] = 1.0f / config.input.std[size_t(c)];
    }
    if (config.record_activity) cupti_ = std::make_unique<CuptiRecorder>(compute_, copy_);
    if (config.collective != nullptr && config.collective->world() > 1)
      timeout_s_ = collective_timeout_s();
    sample_memory();
  }

  // Everything the backend holds, in reverse order of creation; safe on a partial plan.
  void release() {
    cupti_.reset();
    // Collective work may wait forever for a failed peer: poll for it (aborting the
    // communicator on an error or timeout) before anything synchronises.
    if (compute_ && net_) {
      try {
        wait_stream(compute_);
        if (net_->comm_stream()) wait_stream(net_->comm_stream());
      } catch (const Error&) {
        // Destructors do not throw; the communicator is aborted and its kernels have ended.
      }
    }
    if (compute_) cudaStreamSynchronize(compute_);
    if (copy_) cudaStreamSynchronize(copy_);
    destroy_graphs();
    net_.reset();
    libraries_.reset();
    for (auto& step : events_)
      for (cudaEvent_t& e : step)
        if (e) cudaEventDestroy(std::exchange(e, nullptr));
    for (auto& pair : copy_events_)
      for (cudaEvent_t& e : pair)
        if (e) cudaEventDestroy(std::exchange(e, nullptr));
    for (cudaEvent_t* e : {&copied_[0], &copied_[1], &consumed_[0], &consumed_[1], &drain_})
      if (*e) cudaEventDestroy(std::exchange(*e, nullptr));
    if (copy_) cudaStreamDestroy(std::exchange(copy_, nullptr));
    if (compute_) cudaStreamDestroy(std::exchange(compute_, nullptr));
  }

  std::string describe() const override {
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    return fmt::format(
        "cuda: device {} ({}), CUDA runtime {}.{}, cuDNN {}, {} {}, conv {}, BN {}{}, "
        "workspace {} MiB, {} MiB planned{}",
        config_.device, net_->device_name(), runtime / 1000, runtime % 1000 / 10, cudnnGetVersion(),
        precision_name(config_.precision), net_->nhwc() ? "NHWC" : "NCHW", config_.conv_algorithm,
        net_->bn_persistent() ? "persistent" : "spatial",
        net_->bn_add_fused()    ? "+add+ReLU fused"
        : net_->bn_relu_fused() ? "+ReLU fused"
                                : "",
        net_->workspace_bytes() >> 20, net_->device_bytes() >> 20,
        config_.graph ? ", CUDA Graph" : "");
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
    if (!device_slot_) {
      const size_t slot = size_t(next_stage_);
      // The buffer's previous batch must have been converted before it is overwritten; the
      // copy's timing starts here and so covers the producer's work (the decode).
      STOKER_GPU(cudaStreamWaitEvent(copy_, consumed_[slot], 0));
      STOKER_GPU(cudaEventRecord(copy_events_[size_t(stages_ % kStageRing)][0], copy_));
      device_slot_ = true;
    }
    return {stage_images_[size_t(next_stage_)].get(), copy_, net_->dtype(),
            net_->nhwc() ? Layout::nhwc : Layout::nchw};
  }

  DeviceProducer device_producer() const override {
    return {config_.device, [this](void* event) { wait_event(static_cast<cudaEvent_t>(event)); }};
  }

  void stage_impl(const HostBatch& batch) override {
    if (batch.on_device && !device_slot_)
      fail("cuda backend: a batch on the device without device_stage() first");
    if (!batch.on_device && device_slot_)
      fail("cuda backend: device_stage() was followed by a host batch");
    const size_t slot = size_t(next_stage_);
    next_stage_ ^= 1;
    // The pinned labels of this slot were copied two batches ago (long done): wait for that
    // copy before they are overwritten. Polling, as every wait: the copy stream waits on the
    // compute stream, which a dead peer's all-reduce can hold forever.
    wait_event(copied_[slot]);
    std::memcpy(pinned_labels_[slot].get(), batch.labels, size_t(batch.count) * sizeof(int32_t));
    auto& times = copy_events_[size_t(stages_ % kStageRing)];
    if (batch.on_device) {
      device_slot_ = false;  // its copy-stream work (device_stage's producer) is enqueued
    } else {
      // The buffer's previous batch must have been converted before it is overwritten.
      STOKER_GPU(cudaStreamWaitEvent(copy_, consumed_[slot], 0));
      STOKER_GPU(cudaEventRecord(times[0], copy_));
      STOKER_GPU(cudaMemcpyAsync(
          stage_images_[slot].get(), batch.images,
          size_t(batch.count * 3 * config_.height * config_.width) * config_.input.element_bytes(),
          cudaMemcpyHostToDevice, copy_));
    }
    on_device_[slot] = batch.on_device;
    STOKER_GPU(cudaMemcpyAsync(stage_labels_[slot].get(), pinned_labels_[slot].get(),
                               size_t(batch.count) * sizeof(int32_t), cudaMemcpyHostToDevice,
                               copy_));
    STOKER_GPU(cudaEventRecord(times[1], copy_));
    STOKER_GPU(cudaEventRecord(copied_[slot], copy_));
    staged_ = int(slot);
    staged_index_ = stages_++;
  }

  void release_input() override {
    if (staged_ >= 0) wait_event(copied_[size_t(staged_)]);
  }

  void forward_backward() override {
    flush_pending();
    if (begun_ - collected_ >= kRing)
      fail("cuda backend: {} steps not collected; call collect() at least every {} steps",
           begun_ - collected_, kRing);
    slot_ = size_t(begun_ % kRing);
    ++begun_;
    const auto begin = std::chrono::steady_clock::now();
    updated_[slot_] = false;
    graphed_[slot_] = false;
    step_stage_[slot_] = staged_index_;
    record(kBegin);
    if (cupti_) {
      step_marker(compute_);
      marker_steps_.push_back(begun_ - 1);
    }
    consume_input();
    record(kStaged);
    if (config_.graph) {
      pending_ = true;  // run by update(), as graphs once warm, or by flush_pending()
    } else {
      run_forward_backward();
    }
    enqueue_seconds_[slot_] = since(begin);  // update() adds its own
  }

  void update(const SgdConfig& sgd, float lr) override {
    if (begun_ == 0 || updated_[slot_])
      fail("cuda backend: update() without a forward_backward() before it");
    enqueue_update_ = std::chrono::steady_clock::now();
    STOKER_CHECK(!sgd.nesterov || (sgd.momentum > 0 && sgd.dampening == 0));  // torch's rule
    if (sgd.optimizer != Optimizer::sgd)
      fail(
          "cuda backend: optimizer {} is not offered on cuda yet (its update runs on the "
          "device, SGD only); use --optimizer sgd or --backend cpu",
          optimizer_name(sgd.optimizer));
    SgdHyper& h = hyper_ring_.as<SgdHyper>()[slot_];
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
      if (!graphs_[0] && eager_graph_steps_ >= kWarmSteps) capture();
      if (graphs_[0]) {
        run_graphs();
        return;
      }
      ++eager_graph_steps_;
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
    out.reserve(size_t(begun_ - collected_));
    const auto seconds = [](cudaEvent_t a, cudaEvent_t b) {
      float ms = 0;
      STOKER_GPU(cudaEventElapsedTime(&ms, a, b));
      return double(ms) * 1e-3;
    };
    for (; collected_ < begun_; ++collected_) {
      const size_t s = size_t(collected_ % kRing);
      auto& e = events_[s];
      wait_event(updated_[s] ? e[kUpdated] : e[kBackward]);
      const StepStatus& st = ring_.as<StepStatus>()[s];
      StepResult r;
      r.loss = st.loss;
      r.skipped = updated_[s] && st.skipped != 0;
      // The batch's copy on the copy stream (before this step began, overlapping the previous
      // one) plus its conversion on the compute stream: backend.h's definition of stage.
      const auto& copy = copy_events_[size_t(step_stage_[s] % kStageRing)];
      r.times.stage = seconds(copy[0], copy[1]) + seconds(e[kBegin], e[kStaged]);
      r.times.forward = seconds(e[kStaged], e[kForward]);
      r.times.backward = seconds(e[kForward], e[kBackward]);
      r.times.update = updated_[s] ? seconds(e[kBackward], e[kUpdated]) : 0;
      r.times.stage_compute = seconds(e[kBegin], e[kStaged]);
      // The device's step: from its start to the next step's start (the newest: its end), so
      // that a rate is the device's, with the host's delays between steps in it.
      const cudaEvent_t end = collected_ + 1 < begun_
                                  ? events_[size_t((collected_ + 1) % kRing)][kBegin]
                                  : (updated_[s] ? e[kUpdated] : e[kBackward]);
      if (collected_ + 1 < begun_) wait_event(end);
      r.times.wall = seconds(e[kBegin], end);
      r.host_enqueue = enqueue_seconds_[s];
      out.push_back(r);
    }
    sample_memory();
    return out;
  }

  void forward_eval() override {
    flush_pending();
    consume_input();
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
    wait_stream(copy_);
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
    wait_stream(copy_);
    BackendConfig c = config_;
    c.height = height;
    c.width = width;
    const Network net = net_->network();
    destroy_graphs();
    eager_graph_steps_ = 0;
    net_.reset();  // the old shape's device memory first: both may not fit
    net_ = std::make_unique<CudnnNet>(net, c, compute_, *libraries_);
    for (DeviceBuffer& b : stage_images_) b = DeviceBuffer(stage_bytes(c));
    staged_ = -1;
    device_slot_ = false;
    conversion_.dst_nhwc = net_->nhwc();
    conversion_.h = height;
    conversion_.w = width;
    config_ = c;
    load(state, "the state before a reshape");
  }

  std::vector<float> debug_tensor(int id, bool gradient) override {
    flush_pending();
    wait_stream(compute_);
    return net_->debug_tensor(id, gradient);
  }

 private:
  void record(StepEvent e) { STOKER_GPU(cudaEventRecord(events_[slot_][e], compute_)); }

  // Waits for `event`. With a collective of world > 1 the wait polls NCCL's asynchronous error
  // (a failed peer would otherwise hang this rank in cudaEventSynchronize, silently) and gives
  // up after collective_timeout_s(), aborting the communicator; alone, it blocks.
  void wait_event(cudaEvent_t event) const {
    Collective* c = config_.collective;
    if (timeout_s_ <= 0 || c == nullptr) {
      STOKER_GPU(cudaEventSynchronize(event));
      return;
    }
    const bool done = wait_polling(
        [&] {
          const cudaError_t st = cudaEventQuery(event);
          if (st == cudaErrorNotReady) return false;
          STOKER_GPU(st);
          return true;
        },
        [&] { c->check_async(); }, timeout_s_, std::chrono::microseconds(200));
    if (!done) {
      c->abort_communicator();
      fail(
          "cuda backend: rank {} of {} waited {:.0f} s for the device without progress; the "
          "communicator was aborted (a peer rank may have failed; STOKER_NCCL_TIMEOUT_S sets "
          "the limit)",
          c->rank(), c->world(), timeout_s_);
    }
  }
  void wait_stream(cudaStream_t stream) const {
    if (timeout_s_ <= 0) {
      STOKER_GPU(cudaStreamSynchronize(stream));
      return;
    }
    STOKER_GPU(cudaEventRecord(drain_, stream));
    wait_event(drain_);
  }

  // Device memory in use now (the whole device), kept as the high-water mark.
  void sample_memory() {
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return;
    device_total_ = total;
    peak_in_use_ = std::max(peak_in_use_, total - free);
  }

  // The staged batch into the network's input (compute dtype and layout) and labels.
  void consume_input() {
    if (staged_ < 0) fail("cuda backend: no batch staged (call stage() first)");
    const size_t s = size_t(staged_);
    STOKER_GPU(cudaStreamWaitEvent(compute_, copied_[s], 0));
    if (on_device_[s]) {  // written by a device producer in the network's format already
      STOKER_GPU(cudaMemcpyAsync(
          net_->input(), stage_images_[s].get(),
          size_t(config_.batch * 3 * config_.height * config_.width) * dtype_bytes(net_->dtype()),
          cudaMemcpyDeviceToDevice, compute_));
    } else {
      convert_input(conversion_, stage_images_[s].get(), net_->input(), compute_);
    }
    STOKER_GPU(cudaMemcpyAsync(net_->labels(), stage_labels_[s].get(), stage_labels_[s].bytes(),
                               cudaMemcpyDeviceToDevice, compute_));
    STOKER_GPU(cudaEventRecord(consumed_[s], compute_));
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
    STOKER_GPU(cudaGraphLaunch(graphs_[0], compute_));
    record(kForward);
    STOKER_GPU(cudaGraphLaunch(graphs_[1], compute_));
    record(kBackward);
    STOKER_GPU(cudaGraphLaunch(graphs_[2], compute_));
    graphed_[slot_] = true;
    copy_status(true);
    record(kUpdated);
    finish_enqueue();
  }

  void finish_enqueue() {
    updated_[slot_] = true;
    enqueue_seconds_[slot_] += since(enqueue_update_);
  }
  static double since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }

  // The step's loss (and, after an update, whether it was skipped) into the pinned ring.
  void copy_status(bool with_skipped) {
    StepStatus* st = ring_.as<StepStatus>() + slot_;
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
    try {
      for (size_t i = 0; i < parts.size(); ++i) graphs_[i] = capture_one(parts[i]);
    } catch (...) {
      destroy_graphs();
      throw;
    }
  }
  cudaGraphExec_t capture_one(const std::function<void()>& enqueue) {
    STOKER_GPU(cudaStreamBeginCapture(compute_, cudaStreamCaptureModeThreadLocal));
    try {
      enqueue();
    } catch (...) {
      cudaGraph_t broken = nullptr;
      cudaStreamEndCapture(compute_, &broken);
      if (broken) cudaGraphDestroy(broken);
      throw;
    }
    cudaGraph_t graph = nullptr;
    STOKER_GPU(cudaStreamEndCapture(compute_, &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t st = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    STOKER_GPU(st);
    return exec;
  }
  void destroy_graphs() {
    for (cudaGraphExec_t& g : graphs_)
      if (g) cudaGraphExecDestroy(std::exchange(g, nullptr));
  }

  BackendConfig config_;
  cudaStream_t compute_ = nullptr, copy_ = nullptr;
  std::unique_ptr<GpuLibraries> libraries_;  // kept across reshapes, outlives net_
  std::unique_ptr<CudnnNet> net_;
  InputConversion conversion_;
  std::array<DeviceBuffer, 2> stage_images_, stage_labels_;
  std::array<PinnedBuffer, 2> pinned_labels_;
  // Copy stream events around each staged batch's copy (begin, end), by stage count.
  std::array<std::array<cudaEvent_t, 2>, kStageRing> copy_events_{};
  int64_t stages_ = 0, staged_index_ = -1;
  std::array<int64_t, kRing> step_stage_{};  // the stage count of each step's batch
  std::array<cudaEvent_t, 2> copied_{}, consumed_{};
  int next_stage_ = 0, staged_ = -1;
  bool device_slot_ = false;         // device_stage() handed out next_stage_'s buffer
  std::array<bool, 2> on_device_{};  // each staging buffer's batch came from the device
  std::array<std::array<cudaEvent_t, kEvents>, kRing> events_{};
  std::array<bool, kRing> updated_{}, graphed_{};
  PinnedBuffer ring_, hyper_ring_, logits_;
  int64_t begun_ = 0, collected_ = 0;
  size_t slot_ = 0;
  bool pending_ = false;
  int eager_graph_steps_ = 0;
  std::array<cudaGraphExec_t, 3> graphs_{};  // forward, backward, update (capture())
  // Host time of each step's enqueue: forward_backward()'s, plus update()'s from when it began.
  std::chrono::steady_clock::time_point enqueue_update_{};
  std::array<double, kRing> enqueue_seconds_{};
  std::unique_ptr<CuptiRecorder> cupti_;
  std::vector<int64_t> marker_steps_;  // steps whose marker CUPTI has not returned yet
  double timeout_s_ = 0;               // > 0: data parallel, waits poll the collective (wait_event)
  cudaEvent_t drain_ = nullptr;        // recorded at the end of a stream that wait_stream drains
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
          .fusions = kFuseBnRelu | kFuseBnAddRelu,
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
