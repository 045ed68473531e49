// SPDX-License-Identifier: Apache-2.0
// CpuBackend: runs the programs of a DnnlNet, converts parameters between torch's layout and
// the primitives' at load/save time, and applies SGD tensor by tensor on OpenMP threads.
#include "train/cpu/cpu_backend.h"

#include <fmt/format.h>
#include <omp.h>

#include <chrono>
#include <cstdlib>

#include "common/error.h"
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

class CpuBackend final : public Backend {
 public:
  CpuBackend(const Network& net, const BackendConfig& config)
      : d_(plan_dnnl_net(net, with_threads(config))) {
    has_momentum_ = std::make_unique<bool[]>(d_.params.size());
    for (size_t i = 0; i < d_.params.size(); ++i) {
      const Param& p = d_.net.params[i];
      if (!p.trainable) continue;
      const ParamMemory& m = d_.params[i];
      SgdParam s;
      s.value = static_cast<float*>(m.value.get_data_handle());
      s.grad = static_cast<const float*>(m.grad.get_data_handle());
      s.momentum = static_cast<float*>(m.momentum.get_data_handle());
      s.has_momentum = &has_momentum_[i];
      s.n = m.value.get_desc().get_size() / sizeof(float);  // with any layout padding (zeros)
      s.is_bn_or_bias = p.shape.size() == 1;
      sgd_.push_back(s);
    }
  }

  std::string describe() const override {
    const dnnl_version_t* v = dnnl_version();
    int convs = 0, winograd = 0;
    for (const Step& s : d_.forward_train) {
      if (!s.host && s.prim.get_kind() == dnnl::primitive::kind::convolution) {
        ++convs;
        winograd += s.impl.find("wino") != std::string::npos;
      }
    }
    return fmt::format(
        "cpu: oneDNN {}.{}.{} ({}), {}, {} threads, conv {} ({} of {} Winograd), {} weight "
        "reorders/step",
        v->major, v->minor, v->patch, cpu_isa_name(), precision_name(d_.config.precision),
        omp_get_max_threads(), d_.config.conv_algorithm, winograd, convs, d_.reorders_per_step);
  }

  void load(const Checkpoint& ckpt, std::string_view source) override {
    check_checkpoint(ckpt, d_.net, source);
    for (size_t i = 0; i < d_.params.size(); ++i) {
      const Param& p = d_.net.params[i];
      ParamMemory& m = d_.params[i];
      const Tensor* t = find_tensor(ckpt, p.name);
      STOKER_CHECK(t != nullptr);  // check_checkpoint found every key
      if (p.dtype == ParamType::i64) {
        copy_values(*t, std::span<int64_t>(&m.count, 1));
        continue;
      }
      from_plain(*t, m.plain, m.value);
      if (!p.trainable) continue;
      const Tensor* mom = find_tensor(ckpt, std::string(kMomentumPrefix) + p.name);
      has_momentum_[i] = mom != nullptr;
      if (mom != nullptr) from_plain(*mom, m.plain, m.momentum);
    }
  }

  Checkpoint save() const override {
    Checkpoint out;
    for (size_t i = 0; i < d_.params.size(); ++i) {
      const Param& p = d_.net.params[i];
      const ParamMemory& m = d_.params[i];
      if (p.dtype == ParamType::i64) {
        out.tensors.push_back(make_i64_tensor(p.name, p.shape, std::span(&m.count, 1)));
      } else {
        out.tensors.push_back(make_f32_tensor(p.name, p.shape, to_plain(m.value, m.plain)));
      }
    }
    for (size_t i = 0; i < d_.params.size(); ++i) {
      const Param& p = d_.net.params[i];
      if (p.trainable && has_momentum_[i])
        out.tensors.push_back(make_f32_tensor(std::string(kMomentumPrefix) + p.name, p.shape,
                                              to_plain(d_.params[i].momentum, d_.params[i].plain)));
    }
    return out;
  }

  Checkpoint gradients() const override {
    Checkpoint out;
    for (size_t i = 0; i < d_.params.size(); ++i) {
      const Param& p = d_.net.params[i];
      if (p.trainable)
        out.tensors.push_back(
            make_f32_tensor(p.name, p.shape, to_plain(d_.params[i].grad, d_.params[i].plain)));
    }
    return out;
  }

  float forward_backward(const float* images, const int32_t* labels) override {
    const int64_t classes = d_.net.num_classes;
    for (int64_t n = 0; n < d_.config.batch; ++n) {
      if (labels[n] < 0 || labels[n] >= classes)
        fail("{}: label {} of image {} in the batch is outside [0, {})", d_.net.name, labels[n], n,
             classes);
      d_.labels[size_t(n)] = labels[n];
    }
    STOKER_DNNL(d_.images_user.set_data_handle(const_cast<float*>(images)));  // only read
    const auto t0 = Clock::now();
    run(d_, d_.forward_train);
    times_.forward = seconds_since(t0);
    const auto t1 = Clock::now();
    run(d_, d_.backward);
    times_.backward = seconds_since(t1);
    return d_.loss;
  }

  void update(const SgdConfig& sgd, float lr) override {
    const auto t0 = Clock::now();
    // One tensor per task: a tensor's momentum flag flips only after its whole update.
    const int count = int(sgd_.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int i = 0; i < count; ++i) sgd_step(sgd, lr, std::span(&sgd_[size_t(i)], 1));
    times_.update = seconds_since(t0);
  }

  void forward_eval(const float* images) override {
    STOKER_DNNL(d_.images_user.set_data_handle(const_cast<float*>(images)));
    const auto t0 = Clock::now();
    run(d_, d_.forward_eval);
    times_.forward = seconds_since(t0);
    times_.backward = times_.update = 0;
  }

  std::span<const float> logits() const override {
    return {static_cast<const float*>(d_.logits_plain.get_data_handle()),
            size_t(d_.config.batch * d_.net.num_classes)};
  }

  const StepTimes& last_times() const override {
    return times_;
  }

  DnnlNet& net() {
    return d_;
  }

 private:
  void from_plain(const Tensor& t, const memory::desc& plain, memory& to) {
    std::vector<float> values(plain.get_size() / sizeof(float));
    copy_values(t, values);
    memory src = STOKER_DNNL(memory(plain, d_.engine, values.data()));
    STOKER_DNNL(dnnl::reorder(src, to).execute(d_.stream, src, to));
    STOKER_DNNL(d_.stream.wait());
  }

  std::vector<float> to_plain(const memory& from, const memory::desc& plain) const {
    std::vector<float> values(plain.get_size() / sizeof(float));
    memory dst = STOKER_DNNL(memory(plain, d_.engine, values.data()));
    memory src = from;
    dnnl::stream stream = d_.stream;
    STOKER_DNNL(dnnl::reorder(src, dst).execute(stream, src, dst));
    STOKER_DNNL(stream.wait());
    return values;
  }

  DnnlNet d_;
  std::unique_ptr<bool[]> has_momentum_;
  std::vector<SgdParam> sgd_;
  StepTimes times_;
};

}  // namespace

bool cpu_has_native_bf16() {
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
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
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

std::unique_ptr<Backend> make_cpu_backend(const Network& net, const BackendConfig& config) {
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
