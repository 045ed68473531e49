// SPDX-License-Identifier: Apache-2.0
// CudnnNet's core: planning (tensors, gradients' memory, parameters; each layer's plans:
// cudnn_layers.cc), the trial step with its fallbacks, and the programs: the forward and the
// backward walk the lowering's ops (cudnn_net_ops.cc), the update is cudnn_optimizer.cc's.
#include "train/gpu/cudnn_net.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "common/error.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/cudnn_common.h"
#include "train/gpu/gpu_policy.h"
#include "train/gpu/grad_slots.h"

namespace stoker::gpu {
namespace {

float to_float(const void* p, DType t, size_t i) {
  switch (t) {
    case DType::f16:
      return __half2float(static_cast<const __half*>(p)[i]);
    case DType::bf16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

}  // namespace

GpuLibraries::GpuLibraries(cudaStream_t stream) {
  STOKER_GPU(cudnnCreate(cudnn.out()));
  STOKER_GPU(cudnnSetStream(cudnn, stream));
  STOKER_GPU(cublasCreate(cublas.out()));
  STOKER_GPU(cublasSetStream(cublas, stream));
  cublas_workspace = DeviceBuffer(size_t(32) << 20);
  STOKER_GPU(cublasSetWorkspace(cublas, cublas_workspace.get(), cublas_workspace.bytes()));
}

CudnnNet::CudnnNet(const Network& net, const BackendConfig& config, cudaStream_t compute,
                   const GpuLibraries& libraries)
    : net_(net),
      config_(config),
      dtype_(compute_dtype(config.precision)),
      nhwc_(compute_nhwc(config)),
      stream_(compute),
      cudnn_(libraries.cudnn),
      cublas_(libraries.cublas),
      fe_(libraries.fe_graphs.get()),
      plans_(libraries.plans.get()) {
  shapes_ = infer_shapes(net, config.height, config.width);
  for (const Layer& l : net_.layers) {
    if (l.kind == LayerKind::conv && (l.bias || l.groups != 1))
      fail("{}: the GPU backend plans convolutions without bias and with one group", l.name);
  }
  STOKER_CHECK(!net_.layers.empty() && net_.layers.back().kind == LayerKind::fc);
  int device = 0;
  STOKER_GPU(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  STOKER_GPU(cudaGetDeviceProperties(&prop, device));
  device_name_ = prop.name;
  STOKER_GPU(cublasSetMathMode(
      cublas_, config.precision == Precision::f32 ? CUBLAS_PEDANTIC_MATH : CUBLAS_DEFAULT_MATH));
  // NHWC batch norms on cuDNN's persistent kernels (gpu_policy.h: bn_start); trial_step falls
  // back level by level where they are refused. conv_stats (the frontend's graphs) only where
  // --fusions asks for it.
  const BnStart start = bn_start(config, bn_fusion_cap());
  if (start.persistent) bn_mode_ = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
  fusion_ = start.level;
  plan_tensors();
  plan_params();
  plan_layers();
  plan_optimizer();
  alloc(labels_, size_t(config.batch) * sizeof(int32_t));
  alloc(status_, 2 * sizeof(int32_t));
  alloc(hyper_, sizeof(SgdHyper));
  alloc(scale_, sizeof(LossScale));
  alloc(overflow_, sizeof(int32_t));
  alloc(per_sample_, size_t(config.batch) * sizeof(float));
  reset_loss_scale();
  trial_step();
  if (config.collective != nullptr && config.collective->world() > 1) plan_buckets();
}

// One forward and backward on the zeroed buffers while planning: every library call meets
// its shapes once (so an unsupported combination fails here, naming the call, and lazy
// library set-up happens before any graph capture). Parameters are loaded afterwards.
void CudnnNet::trial_step() {
  // Fastest first: fused BN+ReLU, then persistent BN alone, then plain BN; a slower one only
  // where cuDNN said the faster is not supported (gpu_policy.h), and the first failure is what
  // the user reads.
  run_with_fallbacks(
      fmt::format("{} {} on {}: the planning step failed", dtype_name(dtype_),
                  nhwc_ ? "NHWC" : "NCHW", device_name_),
      [this] {
        forward(true);
        loss_and_backward();
        STOKER_GPU(cudaStreamSynchronize(stream_));
      },
      [this]() -> std::string {
        static constexpr const char* kLevel[] = {
            "plain batch-norm calls", "batch norm unfused (Ex)",
            "batch norm + ReLU fused, the add apart",
            "batch norm + add + ReLU fused (Ex), no conv statistics"};
        if (fusion_ > kFusePlain) {
          set_fusion(fusion_ - 1);
          return kLevel[fusion_];
        }
        if (bn_mode_ == CUDNN_BATCHNORM_SPATIAL_PERSISTENT) {
          bn_mode_ = CUDNN_BATCHNORM_SPATIAL;
          for (size_t i = 0; i < net_.layers.size(); ++i)
            if (net_.layers[i].kind == LayerKind::batchnorm)
              layers_[i].bn = bn_plan(net_.layers[i]);
          return "plain (non-persistent) batch norm";
        }
        return {};
      });
}

void CudnnNet::count_batch() {
  for (const Layer& l : net_.layers)
    if (l.kind == LayerKind::batchnorm && l.num_batches_tracked >= 0)
      ++params_[size_t(l.num_batches_tracked)].count;
}

bool CudnnNet::overwritten(int id) const {
  return std::any_of(tensors_.begin(), tensors_.end(),
                     [id](const GpuTensor& t) { return t.alias_of == id; });
}

// The handles, streams and events destroy themselves (handles.h), after the buffers. A
// collective that failed has aborted its communicator before anything gets here (its
// check_async), so the communication stream's kernels have ended.
CudnnNet::~CudnnNet() {
  if (stream_) cudaStreamSynchronize(stream_);
  if (comm_) cudaStreamSynchronize(comm_);
}

void* CudnnNet::alloc(DeviceBuffer& b, size_t bytes) {
  b = DeviceBuffer(bytes);
  if (bytes > 0) STOKER_GPU(cudaMemsetAsync(b.get(), 0, bytes, stream_));
  device_bytes_ += bytes;
  return b.get();
}

void CudnnNet::plan_tensors() {
  const size_t count = net_.tensors.size();
  readers_.assign(count, 0);
  for (const Layer& l : net_.layers)
    for (int in : l.inputs) ++readers_[size_t(in)];
  tensors_.resize(count);
  grad_written_.assign(count, false);
  std::vector<int> root(count, -1);  // whose gradient memory each tensor uses (grad_slots.h)
  std::vector<int64_t> grad_bytes(count, 0);
  const int64_t n = config_.batch;
  for (size_t t = 0; t < count; ++t) {
    GpuTensor& g = tensors_[t];
    const ActShape& s = shapes_[t];
    g.elements = n * s.elements();
    const bool logits = t + 1 == count;
    const DType type = logits ? DType::f32 : dtype_;
    // A ReLU or residual add over an input only it reads runs in place (grad_slots.h).
    if (const int in = in_place_over(net_, readers_, t); in >= 0) {
      g.alias_of = in;
      g.act = tensors_[size_t(in)].act;
      root[t] = root[size_t(in)];
      continue;
    }
    g.act = alloc(g.storage, size_t(g.elements) * dtype_bytes(type));
    if (logits) {
      g.dact = alloc(g.grad_storage, size_t(g.elements) * dtype_bytes(type));
    } else if (t > 0) {
      root[t] = int(t);
      grad_bytes[t] = g.elements * int64_t(dtype_bytes(type));
    }
  }
  plan_gradients(root, grad_bytes);
  if (dtype_ != DType::f32)
    alloc(dlogits_lowp_, size_t(tensors_.back().elements) * dtype_bytes(dtype_));
}

// The activation gradients' memory: one buffer each (keep_activation_gradients), or slots
// shared by gradients whose lifetimes in the backward do not overlap (grad_slots.h), a fused
// batch norm's input's until its add (fused_late_writers).
void CudnnNet::plan_gradients(const std::vector<int>& root, const std::vector<int64_t>& bytes) {
  const size_t count = tensors_.size();
  const std::vector<int> late = fused_late_writers(net_);
  std::vector<int> use_of;
  const std::vector<GradUse> uses = grad_uses(net_, root, bytes, late, &use_of);
  GradSlots slots;
  if (config_.keep_activation_gradients || keep_gradients_from_env()) {
    for (size_t u = 0; u < uses.size(); ++u) {
      slots.slot_of.push_back(int(u));
      slots.slot_bytes.push_back(uses[u].bytes);
    }
  } else {
    slots = plan_grad_slots(uses);
  }
  grad_slots_.resize(slots.slot_bytes.size());
  for (size_t s = 0; s < grad_slots_.size(); ++s)
    alloc(grad_slots_[s], size_t(slots.slot_bytes[s]));
  // A gradient stays readable after the backward when no later use (lower layers) shares its
  // slot.
  grad_kept_.assign(count, false);
  for (size_t t = 1; t + 1 < count; ++t) {
    const int u = use_of[t];
    if (u < 0) continue;
    const int slot = slots.slot_of[size_t(u)];
    tensors_[t].dact = grad_slots_[size_t(slot)].get();
    bool kept = true;
    for (size_t v = 0; v < uses.size(); ++v)
      if (int(v) != u && slots.slot_of[v] == slot && uses[v].lo < uses[size_t(u)].lo) kept = false;
    grad_kept_[t] = kept;
  }
}

void CudnnNet::plan_params() {
  params_.resize(net_.params.size());
  // The gradient arena: trainable tensors by layer from last to first (the backward's order),
  // each starting on a 256-byte boundary as a cudaMalloc'ed buffer would.
  std::vector<size_t> order;
  for (size_t i = 0; i < net_.params.size(); ++i)
    if (net_.params[i].trainable) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [this](size_t a, size_t b) {
    return net_.params[a].layer > net_.params[b].layer;
  });
  std::vector<size_t> offset(net_.params.size(), 0);
  for (size_t i : order) {
    offset[i] = grad_floats_;
    grad_floats_ += (size_t(numel(net_.params[i])) + 63) / 64 * 64;
  }
  alloc(grad_arena_, grad_floats_ * sizeof(float));
  for (size_t i = 0; i < net_.params.size(); ++i) {
    const Param& p = net_.params[i];
    GpuParam& g = params_[i];
    if (p.dtype == ParamType::i64) continue;  // num_batches_tracked: host count
    const size_t bytes = size_t(numel(p)) * sizeof(float);
    alloc(g.value, bytes);
    g.compute = g.value.get();
    if (!p.trainable) continue;
    g.grad = grad_arena_.as<float>() + offset[i];
    alloc(g.momentum, bytes);
    g.raw = g.grad;
    const Layer& l = net_.layers[size_t(p.layer)];
    const bool weight = int(i) == l.weight;
    const bool conv_copy = weight && l.kind == LayerKind::conv && (dtype_ != DType::f32 || nhwc_);
    const bool fc_copy = weight && l.kind == LayerKind::fc && dtype_ != DType::f32;
    if (conv_copy || fc_copy) {
      g.compute = alloc(g.compute_storage, size_t(numel(p)) * dtype_bytes(dtype_));
      // cuBLAS writes the FC weight's gradient in f32 already; cuDNN writes a conv's in
      // the data's dtype and filter layout.
      if (conv_copy) g.raw = alloc(g.raw_storage, size_t(numel(p)) * dtype_bytes(dtype_));
    }
  }
}

void CudnnNet::upload(void* dst, const void* src, size_t bytes) const {
  STOKER_GPU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  STOKER_GPU(cudaStreamSynchronize(stream_));
}

void CudnnNet::download(void* dst, const void* src, size_t bytes) const {
  STOKER_GPU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  STOKER_GPU(cudaStreamSynchronize(stream_));
}

void CudnnNet::forward(bool train) {
  for (const Op& op : lowering_.ops) forward_op(op, train);
}

void CudnnNet::loss_and_backward() {
  loss_forward();
  std::fill(grad_written_.begin(), grad_written_.end(), false);
  grad_written_.back() = true;
  // Data parallelism: each bucket is finished and its all-reduce started as soon as the
  // backward has written it, while the backward goes on.
  const bool reduce = !buckets_.empty();
  size_t next_bucket = 0;
  if (reduce) STOKER_GPU(cudaMemsetAsync(overflow_.get(), 0, sizeof(int32_t), stream_));
  for (size_t o = lowering_.ops.size(); o-- > 0;) {
    backward_op(lowering_.ops[o]);
    while (next_bucket < buckets_.size() && buckets_[next_bucket].last_op >= int(o))
      start_bucket(next_bucket++);
  }
  if (reduce) {
    STOKER_CHECK(next_bucket == buckets_.size());
    join_buckets();
    return;
  }
  STOKER_GPU(cudaMemsetAsync(overflow_.get(), 0, sizeof(int32_t), stream_));
  finish_gradients(slots_dev_.as<TensorSlot>(), finish_chunks_dev_.as<TensorChunk>(),
                   finish_chunk_count_, dtype_ == DType::f16 ? loss_scale_device() : nullptr,
                   nonfinite_flag(), stream_);
}

std::vector<float> CudnnNet::debug_tensor(int id, bool gradient) const {
  STOKER_CHECK(id >= 0 && size_t(id) < tensors_.size());
  if (id == 0 || (gradient ? aliased(id) || !grad_kept_[size_t(id)] : overwritten(id))) return {};
  // A fused op's hidden tensor (a batch norm's output) has no gradient of its own (the ReLU's
  // gradient applied): its memory holds the gradient at the op's output. A tensor the training
  // forward does not write (set_fusion: unwritten_) has neither value nor gradient of its own.
  if (gradient && lowering_.hidden[size_t(id)]) return {};
  if (unwritten_[size_t(id)]) return {};
  const GpuTensor& t = tensors_[size_t(id)];
  const void* src = gradient ? t.dact : t.act;
  STOKER_CHECK(src != nullptr);
  const bool logits = size_t(id) + 1 == tensors_.size();
  const DType type = logits ? DType::f32 : dtype_;
  std::vector<unsigned char> raw(size_t(t.elements) * dtype_bytes(type));
  download(raw.data(), src, raw.size());
  const ActShape& s = shapes_[size_t(id)];
  const int64_t hw = s.h * s.w;
  std::vector<float> out(size_t(t.elements));
  for (int64_t i = 0; i < t.elements; ++i) {
    // i is the NCHW index; NHWC storage puts channel innermost.
    const int64_t px = i % hw, c = (i / hw) % s.c, img = i / (hw * s.c);
    const int64_t j = nhwc_ && !logits ? (img * hw + px) * s.c + c : i;
    out[size_t(i)] = to_float(raw.data(), type, size_t(j));
  }
  return out;
}

}  // namespace stoker::gpu
