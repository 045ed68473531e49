// SPDX-License-Identifier: Apache-2.0
// CpuBackend: runs the programs of a DnnlNet, converts parameters between torch's layout and
// the primitives' at load/save time, and applies SGD tensor by tensor on OpenMP threads.
#include "train/cpu/cpu_backend.h"

#include <fmt/format.h>
#include <omp.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <tuple>

#include "common/clock.h"
#include "common/error.h"
#include "train/backend_front.h"
#include "train/cpu/dnnl_check.h"

namespace stoker::cpu {
namespace {

using dnnl::memory;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// oneDNN reads the OpenMP thread count when it plans and runs; set it before either.
const BackendConfig& with_threads(const BackendConfig& config) {
  if (config.threads > 0) omp_set_num_threads(config.threads);
  return config;
}

// The u8 -> f32 table the loader's collate uses (augment/collate.cc): the same float32
// operations, so u8 input normalised here gives the bits the loader's f32 output would.
std::array<std::array<float, 256>, 3> normalise_table(const InputSpec& in) {
  std::array<std::array<float, 256>, 3> lut{};
  for (int c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      const float x = static_cast<float>(v) / 255.0f;
      lut[size_t(c)][size_t(v)] = (x - in.mean[size_t(c)]) / in.std[size_t(c)];
    }
  }
  return lut;
}

class CpuBackend final : public Backend, public BackendDiagnostics {
 public:
  CpuBackend(const Network& net, const BackendConfig& config)
      : Backend(cpu_caps(), net, config, "backend 'cpu'"),
        owned_(plan_dnnl_net(net, with_threads(config))),
        lut_(normalise_table(config.input)) {
    bind();
  }

  // A new DnnlNet for the new shape (oneDNN's primitive cache makes a shape seen before cheap
  // to plan again); the state moves over in torch's layout, which is exact. The old net goes
  // before the new one is planned, so memory is never more than one plan's (a plan that
  // fails leaves the backend without one: its error ends the run).
  void reshape_impl(int64_t height, int64_t width) override {
    finish_allreduce();
    const Checkpoint state = save();
    BackendConfig c = d_->config;
    c.height = height;
    c.width = width;
    const Network net = d_->net;
    d_ = nullptr;
    owned_.reset();
    owned_ = plan_dnnl_net(net, with_threads(c));
    bind();
    load(state, fmt::format("the state before reshape to {}x{}", height, width));
  }

  // The SGD table, momentum flags and bucket hook for the net in owned_.
  void bind() {
    d_ = owned_.get();
    sgd_.clear();
    has_momentum_ = std::make_unique<bool[]>(d_->params.size());
    for (size_t i = 0; i < d_->params.size(); ++i) {
      const Param& p = d_->net.params[i];
      if (!p.trainable) continue;
      const ParamMemory& m = d_->params[i];
      SgdParam s;
      s.value = static_cast<float*>(m.value.get_data_handle());
      s.grad = static_cast<const float*>(m.grad.get_data_handle());
      s.momentum = static_cast<float*>(m.momentum.get_data_handle());
      s.has_momentum = &has_momentum_[i];
      s.n = m.value.get_desc().get_size() / sizeof(float);  // with any layout padding (zeros)
      s.is_bn_or_bias = p.shape.size() == 1;
      sgd_.push_back(s);
    }
    if (d_->config.record_activity) activity_.reserve(4096);
    Collective* coll = d_->config.collective;
    if (!d_->buckets.empty()) {
      auto* arena = static_cast<uint8_t*>(d_->grad_arena.get_data_handle());
      d_->bucket_ready = [this, coll, arena](size_t k) {
        const GradBucket& b = d_->buckets[k];
        tickets_.push_back(
            coll->start_allreduce_sum(reinterpret_cast<float*>(arena + b.offset), b.floats));
      };
    }
  }

  std::string describe() const override {
    const dnnl_version_t* v = dnnl_version();
    return fmt::format(
        "cpu: oneDNN {}.{}.{} ({}), {}, {} input, {} threads, conv {}, {} weight reorders/step",
        v->major, v->minor, v->patch, cpu_isa_name(), precision_name(d_->config.precision),
        dtype_name(d_->config.input.dtype), omp_get_max_threads(), d_->config.conv_algorithm,
        d_->reorders_per_step);
  }

  HostMemory host_memory() const override { return {}; }  // the heap: nothing to pin

  void load(const Checkpoint& ckpt, std::string_view source) override {
    const std::vector<bool> momentum = load_params(ckpt, d_->net, source, access());
    for (size_t i = 0; i < momentum.size(); ++i) has_momentum_[i] = momentum[i];
  }

  Checkpoint save() const override { return save_params(d_->net, access()); }

  Checkpoint gradients() const override {
    finish_allreduce();
    return gradient_params(d_->net, access());
  }

  void stage_impl(const HostBatch& batch) override {
    for (int64_t n = 0; n < d_->config.batch; ++n) d_->labels[size_t(n)] = batch.labels[n];
    if (d_->config.input.dtype == DType::f32) {  // read in place: nothing to copy
      STOKER_DNNL(d_->images_user.set_data_handle(const_cast<void*>(batch.images)));
      stage_s_ = 0;
      return;
    }
    const auto t0 = Clock::now();
    const int64_t begin = now_ns();
    normalise_u8(static_cast<const uint8_t*>(batch.images));
    STOKER_DNNL(d_->images_user.set_data_handle(d_->images_f32.data()));
    stage_s_ = seconds_since(t0);
    if (d_->config.record_activity) record("input u8 to f32", begin, steps_);
  }

  // The CPU reads the images synchronously inside forward: by the time the caller can call
  // this, they are no longer needed (and u8 input was converted in stage()).
  void release_input() override {}

  void forward_backward() override {
    finish_allreduce();  // the last step's, when update() was not called
    std::vector<ActivityRecord>* rec = d_->config.record_activity ? &activity_ : nullptr;
    StepResult r;
    r.times.stage = stage_s_;
    r.times.stage_compute = stage_s_;  // the CPU stages on its compute threads
    const auto t0 = Clock::now();
    run(*d_, d_->forward_train, rec, steps_);
    r.times.forward = seconds_since(t0);
    const auto t1 = Clock::now();
    run(*d_, d_->backward, rec, steps_);
    r.times.backward = seconds_since(t1);
    r.loss = d_->loss;
    pending_.push_back(r);
    ++steps_;
  }

  void update(const SgdConfig& sgd, float lr) override {
    finish_allreduce();
    const auto t0 = Clock::now();
    const int64_t begin = d_->config.record_activity ? now_ns() : 0;
    // One tensor per task: a tensor's momentum flag flips only after its whole update.
    const int count = int(sgd_.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < count; ++i) sgd_step(sgd, lr, std::span(&sgd_[size_t(i)], 1));
    // Its time goes with the step it follows, unless that step was collected already.
    if (!pending_.empty()) pending_.back().times.update = seconds_since(t0);
    if (d_->config.record_activity) record("sgd update", begin, steps_ - 1);
  }

  std::vector<StepResult> collect() override {
    std::vector<StepResult> out;
    out.swap(pending_);
    return out;
  }

  void forward_eval() override {
    finish_allreduce();
    run(*d_, d_->forward_eval, d_->config.record_activity ? &activity_ : nullptr, -1);
  }

  std::span<const float> logits() override {
    return {static_cast<const float*>(d_->logits_plain.get_data_handle()),
            size_t(d_->config.batch * d_->net.num_classes)};
  }

  BackendDiagnostics& diagnostics() override {
    return *this;
  }

  std::vector<ActivityRecord> take_activity() override {
    std::vector<ActivityRecord> out;
    out.swap(activity_);
    if (d_->config.record_activity) activity_.reserve(out.capacity());
    return out;
  }

  std::vector<ConvChoice> algorithms() const override {
    std::vector<ConvChoice> out;
    const auto find = [&](const std::vector<Step>& program, const std::string& what) {
      for (const Step& s : program)
        if (s.what == what) return s.impl;
      return std::string();
    };
    for (const Layer& l : d_->net.layers) {
      if (l.kind != LayerKind::conv) continue;
      for (const auto& [pass, program, suffix] :
           {std::tuple{"forward", &d_->forward_train, " forward"},
            std::tuple{"backward_data", &d_->backward, " backward-data"},
            std::tuple{"backward_weights", &d_->backward, " backward-weights"}}) {
        std::string impl = find(*program, l.name + suffix);
        if (!impl.empty()) out.push_back({l.name, pass, std::move(impl), 0, 0});
      }
    }
    return out;
  }

  std::vector<float> debug_tensor(int id, bool gradient) override {
    finish_allreduce();
    return cpu::debug_tensor(*d_, id, gradient);
  }

  DnnlNet& net() {
    return *d_;
  }

 private:
  // Waits for the gradient buckets the backward started, then turns the sums into the mean
  // over the ranks (the whole arena: its padding is zero). The wait is the step's exposed
  // communication (StepTimes::allreduce_wait).
  void finish_allreduce() const {
    if (tickets_.empty()) return;
    const auto t0 = Clock::now();
    const int64_t begin = d_->config.record_activity ? now_ns() : 0;
    for (const uint64_t t : tickets_) d_->config.collective->wait(t);
    tickets_.clear();
    const double waited = seconds_since(t0);
    if (d_->config.record_activity) record("gradient all-reduce wait", begin, steps_ - 1);
    float* g = static_cast<float*>(d_->grad_arena.get_data_handle());
    const int64_t count = int64_t(d_->grad_arena_bytes / sizeof(float));
    const float scale = 1.0f / float(d_->config.collective->world());
#pragma omp parallel for
    for (int64_t i = 0; i < count; ++i) g[i] *= scale;
    if (!pending_.empty()) pending_.back().times.allreduce_wait = waited;
  }

  void record(const char* name, int64_t begin, int64_t step) const {
    ActivityRecord r;
    r.kind = ActivityRecord::Kind::primitive;
    r.begin_ns = begin;
    r.end_ns = now_ns();
    r.name = name;
    r.step = step;
    activity_.push_back(std::move(r));
  }

  // u8 pixels, NCHW or NHWC as the input, into images_f32 in the same layout.
  void normalise_u8(const uint8_t* in) {
    float* out = d_->images_f32.data();
    const int64_t hw = d_->config.height * d_->config.width;
    const int64_t n = d_->config.batch;
    if (d_->config.input.layout == Layout::nhwc) {
#pragma omp parallel for
      for (int64_t p = 0; p < n * hw; ++p)
        for (int c = 0; c < 3; ++c) out[p * 3 + c] = lut_[size_t(c)][in[p * 3 + c]];
    } else {
#pragma omp parallel for collapse(2)
      for (int64_t i = 0; i < n; ++i)
        for (int c = 0; c < 3; ++c) {
          const int64_t o = (i * 3 + c) * hw;
          const auto& t = lut_[size_t(c)];
          for (int64_t p = 0; p < hw; ++p) out[o + p] = t[in[o + p]];
        }
    }
  }

  // The checkpoint walk's hooks (backend_front.h): torch's layout through a reorder.
  ParamAccess access() const {
    ParamAccess a;
    a.count = [this](size_t i) { return &d_->params[i].count; };
    a.write = [this](size_t i, ParamPart part, std::span<const float> values) {
      ParamMemory& m = d_->params[i];
      from_plain(values, m.plain, part == ParamPart::value ? m.value : m.momentum);
    };
    a.read = [this](size_t i, ParamPart part) {
      const ParamMemory& m = d_->params[i];
      return to_plain(part == ParamPart::value      ? m.value
                      : part == ParamPart::momentum ? m.momentum
                                                    : m.grad,
                      m.plain);
    };
    a.has_momentum = [this](size_t i) { return has_momentum_[i]; };
    return a;
  }

  void from_plain(std::span<const float> values, const memory::desc& plain, memory& to) const {
    STOKER_CHECK(values.size() * sizeof(float) == plain.get_size());
    memory src = STOKER_DNNL(memory(plain, d_->engine, const_cast<float*>(values.data())));
    dnnl::stream stream = d_->stream;
    STOKER_DNNL(dnnl::reorder(src, to).execute(stream, src, to));
    STOKER_DNNL(stream.wait());
  }

  std::vector<float> to_plain(const memory& from, const memory::desc& plain) const {
    std::vector<float> values(plain.get_size() / sizeof(float));
    memory dst = STOKER_DNNL(memory(plain, d_->engine, values.data()));
    memory src = from;
    dnnl::stream stream = d_->stream;
    STOKER_DNNL(dnnl::reorder(src, dst).execute(stream, src, dst));
    STOKER_DNNL(stream.wait());
    return values;
  }

  std::unique_ptr<DnnlNet> owned_;
  DnnlNet* d_ = nullptr;  // owned_'s, rebound by reshape
  std::array<std::array<float, 256>, 3> lut_;
  std::unique_ptr<bool[]> has_momentum_;
  std::vector<SgdParam> sgd_;
  double stage_s_ = 0;
  int64_t steps_ = 0;  // forward_backward calls so far: the step of activity records
  // Mutable: gradients() const finishes the all-reduce it reports.
  mutable std::vector<StepResult> pending_;
  mutable std::vector<ActivityRecord> activity_;
  mutable std::vector<uint64_t> tickets_;  // gradient buckets in flight, in start order
};

}  // namespace

bool cpu_has_native_bf16() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_fp16 ||
         isa == dnnl::cpu_isa::avx512_core_amx || isa == dnnl::cpu_isa::avx512_core_amx_fp16;
}

std::string cpu_isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx2_vnni_2:
      return "avx2_vnni_2";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_fp16:
      return "avx512_core_fp16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    case dnnl::cpu_isa::avx512_core_amx_fp16:
      return "avx512_core_amx_fp16";
    default:
      return "other";
  }
}

BackendCaps cpu_caps() {
  // oneDNN runs inside the loop's calls on the host's own memory; it fuses a batch norm with
  // its ReLU, and a block's add with its ReLU (dnnl_net.h), and offers f32 and bf16.
  return {.activity_records = true,
          .fusions = kCpuFusions,
          .precisions = precision_bit(Precision::f32) | precision_bit(Precision::bf16)};
}

std::unique_ptr<Backend> make_cpu_backend(const Network& net, const BackendConfig& config) {
  if (!cpu_caps().offers(config.precision))
    fail("precision {} is not offered by the CPU backend (oneDNN): use f32 or bf16",
         precision_name(config.precision));
  if (config.layout != ComputeLayout::automatic)
    fail(
        "compute layout {} is not offered by the CPU backend: oneDNN keeps its own blocked "
        "layouts (use auto; nchw/nhwc apply to cuda)",
        compute_layout_name(config.layout));
  // STOKER_TEST_BF16 lets oneDNN emulate bf16 with AVX-512 (several times slower than f32):
  // for checking the bf16 plan's numerics on machines without native bf16, not for speed.
  if (config.precision == Precision::bf16 && !cpu_has_native_bf16() &&
      std::getenv("STOKER_TEST_BF16") == nullptr) {
    fail(
        "bf16 on the CPU needs native bf16 (AVX512_BF16 or AMX); this CPU's best instruction "
        "set is {} (hint: --precision f32)",
        cpu_isa_name());
  }
  return std::make_unique<CpuBackend>(net, config);
}

DnnlNet& dnnl_net_of(Backend& backend) {
  auto* cpu = dynamic_cast<CpuBackend*>(&backend);
  STOKER_CHECK_MSG(cpu != nullptr, "not a CPU backend");
  return cpu->net();
}

}  // namespace stoker::cpu
