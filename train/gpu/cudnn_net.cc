// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/cudnn_net.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "common/error.h"
#include "train/backend_front.h"
#include "train/gpu/cuda_check.h"
#include "train/gpu/gpu_policy.h"
#include "train/gpu/grad_slots.h"

namespace stoker::gpu {
namespace {

constexpr int64_t kChunk = 65536;  // elements per block of the multi-tensor kernels
const float kOne = 1.0f, kZero = 0.0f;

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

std::vector<TensorChunk> chunks_of(const std::vector<TensorSlot>& slots,
                                   const std::vector<bool>& take) {
  std::vector<TensorChunk> out;
  for (size_t s = 0; s < slots.size(); ++s) {
    if (!take[s]) continue;
    for (int64_t b = 0; b < slots[s].n; b += kChunk)
      out.push_back({int32_t(s), b, std::min(slots[s].n, b + kChunk)});
  }
  return out;
}

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

cudnnBatchNormOps_t bn_ops(BnCall c) {
  switch (c) {
    case BnCall::relu:
      return CUDNN_BATCHNORM_OPS_BN_ACTIVATION;
    case BnCall::add_relu:
      return CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
    default:
      return CUDNN_BATCHNORM_OPS_BN;
  }
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    default:
      return "f32";
  }
}

}  // namespace

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
      cublas_(libraries.cublas) {
  check_plan(net, config, "backend 'cuda'");  // a reshape plans here without make_cuda_backend
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
  // cuDNN's persistent batch-norm kernels serve NHWC half/bf16 through the Ex calls (torch
  // calls cudnnBatchNormalizationForwardTrainingEx for channels_last); trial_step falls back
  // level by level where they are refused.
  if (nhwc_ && dtype_ != DType::f32) {
    bn_mode_ = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;
    fusion_ = std::min(kFuseAddRelu, bn_fusion_cap());
  }
  cudnnActivationDescriptor_t act = nullptr;
  STOKER_GPU(cudnnCreateActivationDescriptor(&act));
  relu_desc_.reset(act);
  STOKER_GPU(cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
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
        static constexpr const char* kLevel[] = {"plain batch-norm calls",
                                                 "batch norm unfused (Ex)",
                                                 "batch norm + ReLU fused, the add apart"};
        if (fusion_ > kFusePlain) {
          set_fusion(fusion_ - 1);
          return kLevel[fusion_];
        }
        if (bn_mode_ == CUDNN_BATCHNORM_SPATIAL_PERSISTENT) {
          bn_mode_ = CUDNN_BATCHNORM_SPATIAL;
          return "plain (non-persistent) batch norm";
        }
        return {};
      });
}

void CudnnNet::set_fusion(int level) {
  fusion_ = level;
  relu_fused_.assign(net_.layers.size(), false);
  for (GpuLayer& g : layers_) {
    g.call = BnCall::plain;
    g.z = g.fused_out = g.fused_bn = -1;
  }
  for (size_t i = 0; i < net_.layers.size(); ++i) {
    const Layer& l = net_.layers[i];
    GpuLayer& g = layers_[i];
    if (l.kind != LayerKind::batchnorm || level < kFuseEx || !g.offers_ex) continue;
    g.call = BnCall::ex;
    if (i + 1 >= net_.layers.size()) continue;
    // The same condition as the in-place ReLU: the BN's output is read by the ReLU only.
    const Layer& next = net_.layers[i + 1];
    if (level >= kFuseRelu && g.offers_relu && next.kind == LayerKind::relu &&
        next.inputs[0] == l.output && tensors_[size_t(next.output)].alias_of == l.output) {
      g.call = BnCall::relu;
      relu_fused_[i + 1] = true;
      continue;
    }
    // A block's last BN: read only by an add (as its branch, computed in place over it),
    // whose output only the next ReLU reads, in place. The shortcut (z) may come after the BN
    // (the downsample), so the fused call runs at the add.
    if (level < kFuseAddRelu || !g.offers_add_relu) continue;
    for (size_t a = i + 1; a + 1 < net_.layers.size(); ++a) {
      const Layer& add = net_.layers[a];
      const Layer& relu = net_.layers[a + 1];
      if (add.kind != LayerKind::add || add.inputs[0] != l.output) continue;
      if (tensors_[size_t(add.output)].alias_of != l.output || relu.kind != LayerKind::relu ||
          relu.inputs[0] != add.output || tensors_[size_t(relu.output)].alias_of != add.output)
        break;
      g.call = BnCall::add_relu;
      g.z = add.inputs[1];
      g.fused_out = relu.output;
      layers_[a].fused_bn = int(i);
      relu_fused_[a + 1] = true;
      break;
    }
  }
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
    if (!logits) g.desc = make_tensor_desc(dtype_, nhwc_, n, s.c, s.h, s.w);
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

void CudnnNet::plan_layers() {
  layers_.resize(net_.layers.size());
  const ConvPolicy policy = parse_conv_policy(config_.conv_algorithm);
  const std::string key_prefix =
      fmt::format("{} cudnn{} sm{}", device_name_, cudnnGetVersion(), [] {
        // Checked: an unchecked failure would key the cache as "sm0" and share measured
        // choices between devices.
        int d = 0, major = 0, minor = 0;
        STOKER_GPU(cudaGetDevice(&d));
        STOKER_GPU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d));
        STOKER_GPU(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, d));
        return major * 10 + minor;
      }());
  // Exhaustive search measures in a workspace as large as the limit allows (planning only).
  DeviceBuffer find_ws;
  // STOKER_CUDNN_ALGO_CACHE=FILE keeps measured choices across processes (read here, written
  // after planning).
  const char* cache_file = std::getenv("STOKER_CUDNN_ALGO_CACHE");
  if (policy.kind == ConvPolicy::Kind::exhaustive && cache_file && *cache_file)
    AlgoCache::process().load(cache_file);
  if (policy.kind == ConvPolicy::Kind::exhaustive) {
    size_t free = 0, total = 0;
    STOKER_GPU(cudaMemGetInfo(&free, &total));
    find_ws = DeviceBuffer(std::min(config_.workspace_limit, free / 2));
  }
  size_t workspace = 0;
  const int64_t n = config_.batch;
  for (size_t i = 0; i < net_.layers.size(); ++i) {
    const Layer& l = net_.layers[i];
    GpuLayer& g = layers_[i];
    const ActShape& in = shapes_[size_t(l.inputs[0])];
    const ActShape& out = shapes_[size_t(l.output)];
    try {
      switch (l.kind) {
        case LayerKind::conv: {
          const ConvGeometry geo{n,        in.c,  in.h,  in.w,     out.c,     l.kernel,
                                 l.kernel, out.h, out.w, l.stride, l.padding, l.groups};
          const GpuParam& w = params_[size_t(l.weight)];
          const ConvScratch scratch{tensors_[size_t(l.inputs[0])].act,
                                    w.compute,
                                    tensors_[size_t(l.output)].act,
                                    tensors_[size_t(l.inputs[0])].dact,
                                    w.raw,
                                    find_ws.get(),
                                    find_ws.bytes()};
          g.conv =
              plan_conv(cudnn_, l.name, geo, dtype_, nhwc_, config_.precision, l.inputs[0] != 0,
                        policy, config_.workspace_limit, key_prefix, scratch);
          for (size_t b : g.conv.workspace) workspace = std::max(workspace, b);
          choices_.insert(choices_.end(), g.conv.choices.begin(), g.conv.choices.end());
          break;
        }
        case LayerKind::batchnorm:
          plan_batchnorm(l, g, workspace);
          break;
        case LayerKind::maxpool:
        case LayerKind::global_avgpool: {
          cudnnPoolingDescriptor_t d = nullptr;
          STOKER_GPU(cudnnCreatePoolingDescriptor(&d));
          g.pool.reset(d);
          if (l.kind == LayerKind::maxpool) {
            STOKER_GPU(cudnnSetPooling2dDescriptor(d, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN,
                                                   l.kernel, l.kernel, l.padding, l.padding,
                                                   l.stride, l.stride));
            g.pool_shape =
                MaxPoolShape{n, in.c, in.h, in.w, out.h, out.w, l.kernel, l.stride, l.padding};
            alloc(g.pool_offsets, maxpool_offsets_bytes(g.pool_shape));
          } else
            STOKER_GPU(cudnnSetPooling2dDescriptor(d, CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                                                   CUDNN_PROPAGATE_NAN, int(in.h), int(in.w), 0, 0,
                                                   int(in.h), int(in.w)));
          break;
        }
        default:
          break;
      }
    } catch (const Error& e) {
      fail("planning {} ({}): {}", l.name, kind_name(l.kind), e.what());
    }
  }
  find_ws = DeviceBuffer();
  set_fusion(fusion_);
  if (policy.kind == ConvPolicy::Kind::exhaustive && cache_file && *cache_file)
    AlgoCache::process().save(cache_file);
  alloc(workspace_, workspace);
}

// A batch norm's statistics descriptor and buffers; under fusion also which Ex forms cuDNN
// sizes for its shapes (a refusal here only means that form is not used for this layer), with
// the largest workspace and reserve space among them.
void CudnnNet::plan_batchnorm(const Layer& l, GpuLayer& g, size_t& workspace) {
  cudnnTensorDescriptor_t d = nullptr;
  STOKER_GPU(cudnnCreateTensorDescriptor(&d));
  g.bn.reset(d);
  const cudnnTensorDescriptor_t x = tensors_[size_t(l.inputs[0])].desc.get();
  STOKER_GPU(cudnnDeriveBNTensorDescriptor(d, x, bn_mode_));
  const int64_t c = shapes_[size_t(l.output)].c;
  alloc(g.save_mean, size_t(c) * sizeof(float));
  alloc(g.save_invvar, size_t(c) * sizeof(float));
  if (fusion_ == kFusePlain) return;
  size_t reserve = 0;
  const auto offers = [&](cudnnBatchNormOps_t ops) {
    const bool add = ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
    const cudnnActivationDescriptor_t act =
        ops == CUDNN_BATCHNORM_OPS_BN ? nullptr : relu_desc_.get();
    size_t fwd = 0, bwd = 0, res = 0;
    if (cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
            cudnn_, bn_mode_, ops, x, add ? x : nullptr, x, d, act, &fwd) != CUDNN_STATUS_SUCCESS ||
        cudnnGetBatchNormalizationBackwardExWorkspaceSize(cudnn_, bn_mode_, ops, x, x, x,
                                                          add ? x : nullptr, x, d, act,
                                                          &bwd) != CUDNN_STATUS_SUCCESS ||
        cudnnGetBatchNormalizationTrainingExReserveSpaceSize(cudnn_, bn_mode_, ops, act, x, &res) !=
            CUDNN_STATUS_SUCCESS)
      return false;
    workspace = std::max({workspace, fwd, bwd});
    reserve = std::max(reserve, res);
    return true;
  };
  g.offers_ex = offers(CUDNN_BATCHNORM_OPS_BN);
  g.offers_relu = g.offers_ex && offers(CUDNN_BATCHNORM_OPS_BN_ACTIVATION);
  g.offers_add_relu = g.offers_ex && offers(CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION);
  if (g.offers_ex) alloc(g.reserve, std::max<size_t>(reserve, 1));
}

void CudnnNet::plan_optimizer() {
  std::vector<bool> finish;
  for (size_t i = 0; i < net_.params.size(); ++i) {
    const Param& p = net_.params[i];
    if (!p.trainable) continue;
    GpuParam& g = params_[i];
    const Layer& l = net_.layers[size_t(p.layer)];
    TensorSlot s;
    s.value = g.value.as<float>();
    s.grad = g.grad;
    s.momentum = g.momentum.as<float>();
    s.raw = g.raw;
    s.compute = g.compute == g.value.get() ? nullptr : g.compute;
    s.n = numel(p);
    s.raw_dtype = g.raw == g.grad ? DType::f32 : dtype_;
    s.compute_dtype = dtype_;
    s.krsc = (nhwc_ && l.kind == LayerKind::conv && int(i) == l.weight) ? 1 : 0;
    if (p.shape.size() == 4) {
      s.k = int32_t(p.shape[0]);
      s.c = int32_t(p.shape[1]);
      s.rs = int32_t(p.shape[2] * p.shape[3]);
    }
    s.decay_exempt = p.shape.size() == 1 ? 1 : 0;  // as the CPU backend: BN params and biases
    g.slot = int(slots_.size());
    slots_.push_back(s);
    // f16 unscales and checks every gradient; otherwise only library gradients that are
    // not already f32 in torch's layout need a pass.
    finish.push_back(dtype_ == DType::f16 || g.raw != g.grad);
  }
  const std::vector<TensorChunk> all = chunks_of(slots_, std::vector<bool>(slots_.size(), true));
  const std::vector<TensorChunk> some = chunks_of(slots_, finish);
  chunk_count_ = int64_t(all.size());
  finish_chunk_count_ = int64_t(some.size());
  alloc(slots_dev_, slots_.size() * sizeof(TensorSlot));
  alloc(chunks_dev_, all.size() * sizeof(TensorChunk));
  alloc(finish_chunks_dev_, std::max<size_t>(1, some.size()) * sizeof(TensorChunk));
  STOKER_GPU(cudaMemcpyAsync(slots_dev_.get(), slots_.data(), slots_dev_.bytes(),
                             cudaMemcpyHostToDevice, stream_));
  STOKER_GPU(cudaMemcpyAsync(chunks_dev_.get(), all.data(), all.size() * sizeof(TensorChunk),
                             cudaMemcpyHostToDevice, stream_));
  if (!some.empty())
    STOKER_GPU(cudaMemcpyAsync(finish_chunks_dev_.get(), some.data(),
                               some.size() * sizeof(TensorChunk), cudaMemcpyHostToDevice, stream_));
  STOKER_GPU(cudaStreamSynchronize(stream_));  // the host vectors above go out of scope
}

void CudnnNet::plan_buckets() {
  // The trainable tensors in arena order, cut into buckets of at least bucket_bytes.
  std::vector<size_t> order;
  for (size_t i = 0; i < net_.params.size(); ++i)
    if (net_.params[i].trainable) order.push_back(i);
  std::sort(order.begin(), order.end(),
            [this](size_t a, size_t b) { return params_[a].grad < params_[b].grad; });
  const size_t limit = std::max<size_t>(1, config_.bucket_bytes / sizeof(float));
  std::vector<TensorChunk> chunks;
  Bucket open;
  bool empty = true;
  const auto close = [&] {
    open.chunk_count = int64_t(chunks.size()) - open.chunk_begin;
    buckets_.push_back(std::move(open));
    empty = true;
  };
  for (size_t i : order) {
    const GpuParam& g = params_[i];
    const size_t offset = size_t(g.grad - grad_arena_.as<float>());
    if (empty) {
      open = Bucket{.offset = offset, .chunk_begin = int64_t(chunks.size())};
      empty = false;
    }
    open.last_layer = net_.params[i].layer;
    open.floats = offset + (size_t(numel(net_.params[i])) + 63) / 64 * 64 - open.offset;
    // The same finish pass as without buckets, tensor by tensor (plan_optimizer's rule).
    if (dtype_ == DType::f16 || g.raw != g.grad) {
      std::vector<bool> take(slots_.size(), false);
      take[size_t(g.slot)] = true;
      const std::vector<TensorChunk> mine = chunks_of(slots_, take);
      chunks.insert(chunks.end(), mine.begin(), mine.end());
    }
    if (open.floats >= limit) close();
  }
  if (!empty) close();
  STOKER_CHECK(!buckets_.empty() &&
               buckets_.back().offset + buckets_.back().floats == grad_floats_);
  alloc(bucket_chunks_dev_, std::max<size_t>(1, chunks.size()) * sizeof(TensorChunk));
  if (!chunks.empty())
    STOKER_GPU(cudaMemcpyAsync(bucket_chunks_dev_.get(), chunks.data(),
                               chunks.size() * sizeof(TensorChunk), cudaMemcpyHostToDevice,
                               stream_));
  STOKER_GPU(cudaStreamCreateWithFlags(comm_.out(), cudaStreamNonBlocking));
  for (Bucket& b : buckets_)
    STOKER_GPU(cudaEventCreateWithFlags(b.ready.out(), cudaEventDisableTiming));
  STOKER_GPU(cudaEventCreateWithFlags(reduced_.out(), cudaEventDisableTiming));
  STOKER_GPU(cudaStreamSynchronize(stream_));  // `chunks` goes out of scope
}

// Bucket b's gradients are all written: finish them (cast, layout, unscale) on the compute
// stream, then fork the communication stream from there and start their sum over the ranks.
void CudnnNet::start_bucket(size_t b) {
  const Bucket& k = buckets_[b];
  if (k.chunk_count > 0)
    finish_gradients(slots_dev_.as<TensorSlot>(),
                     bucket_chunks_dev_.as<TensorChunk>() + k.chunk_begin, k.chunk_count,
                     dtype_ == DType::f16 ? loss_scale_device() : nullptr, nonfinite_flag(),
                     stream_);
  STOKER_GPU(cudaEventRecord(k.ready, stream_));
  STOKER_GPU(cudaStreamWaitEvent(comm_, k.ready, 0));
  config_.collective->allreduce_sum(grad_arena_.as<float>() + k.offset, k.floats,
                                    CollectiveMemory{.device = true, .stream = comm_.get()});
}

// The compute stream waits for every bucket's sum, then makes it the mean (what the update and
// gradients() see). Each rank scales the same bits by the same factor: identical results.
void CudnnNet::join_buckets() {
  STOKER_GPU(cudaEventRecord(reduced_, comm_));
  STOKER_GPU(cudaStreamWaitEvent(stream_, reduced_, 0));
  const float mean = 1.0f / float(config_.collective->world());
  STOKER_GPU(cublasSscal_64(cublas_, int64_t(grad_floats_), &mean, grad_arena_.as<float>(), 1));
}

int32_t* CudnnNet::nonfinite_flag() const {
  return skips_nonfinite_step(config_.precision) ? overflow_.as<int32_t>() : nullptr;
}

void CudnnNet::upload(void* dst, const void* src, size_t bytes) const {
  STOKER_GPU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_));
  STOKER_GPU(cudaStreamSynchronize(stream_));
}

void CudnnNet::download(void* dst, const void* src, size_t bytes) const {
  STOKER_GPU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  STOKER_GPU(cudaStreamSynchronize(stream_));
}

void CudnnNet::reset_loss_scale() {
  set_loss_scale(LossScale{});
}

void CudnnNet::set_loss_scale(const LossScale& scale) {
  LossScale s = scale;
  if (dtype_ != DType::f16) s = LossScale{.scale = 1.0f};  // no scaling
  upload(scale_.get(), &s, sizeof(s));
}

LossScale CudnnNet::loss_scale() const {
  LossScale s;
  download(&s, scale_.get(), sizeof(s));
  return s;
}

bool CudnnNet::has_momentum(int i) const {
  const int slot = params_[size_t(i)].slot;
  if (slot < 0) return false;
  TensorSlot s;
  download(&s, slots_dev_.as<TensorSlot>() + slot, sizeof(s));
  return s.has_momentum != 0;
}

void CudnnNet::set_momentum_flags(const std::vector<bool>& flags) {
  STOKER_CHECK(flags.size() == params_.size());
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].slot >= 0) slots_[size_t(params_[i].slot)].has_momentum = flags[i] ? 1 : 0;
  upload(slots_dev_.get(), slots_.data(), slots_dev_.bytes());
}

void CudnnNet::count_batch() {
  for (const Layer& l : net_.layers)
    if (l.kind == LayerKind::batchnorm && l.num_batches_tracked >= 0)
      ++params_[size_t(l.num_batches_tracked)].count;
}

void CudnnNet::fc_forward(const Layer& l) {
  const ActShape& in = shapes_[size_t(l.inputs[0])];
  const int k = int(in.elements()), c = l.out_channels, n = int(config_.batch);
  const cublasComputeType_t compute =
      config_.precision == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  float* y = static_cast<float*>(tensors_[size_t(l.output)].act);
  // Row-major Y[n, c] = X[n, k] W[c, k]^T, as column-major Y^T = W^T' X^T.
  STOKER_GPU(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, c, n, k, &kOne,
                          params_[size_t(l.weight)].compute, cuda_type(dtype_), k,
                          tensors_[size_t(l.inputs[0])].act, cuda_type(dtype_), k, &kZero, y,
                          CUDA_R_32F, c, compute, CUBLAS_GEMM_DEFAULT));
  if (l.bias_param >= 0)
    add_bias(y, params_[size_t(l.bias_param)].value.as<float>(), n, c, stream_);
}

void CudnnNet::fc_backward(const Layer& l, float beta_dx) {
  const ActShape& in = shapes_[size_t(l.inputs[0])];
  const int k = int(in.elements()), c = l.out_channels, n = int(config_.batch);
  const cublasComputeType_t compute =
      config_.precision == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const float* dy32 = static_cast<const float*>(tensors_[size_t(l.output)].dact);
  const void* dy = dtype_ == DType::f32 ? static_cast<const void*>(dy32) : dlogits_lowp_.get();
  const GpuParam& w = params_[size_t(l.weight)];
  // dW[c, k] = dY[n, c]^T X[n, k]: column-major dW^T = X^T dY'.
  STOKER_GPU(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_T, k, c, n, &kOne,
                          tensors_[size_t(l.inputs[0])].act, cuda_type(dtype_), k, dy,
                          cuda_type(dtype_), c, &kZero, w.raw, CUDA_R_32F, k, compute,
                          CUBLAS_GEMM_DEFAULT));
  if (l.bias_param >= 0)
    bias_gradient(dy32, static_cast<float*>(params_[size_t(l.bias_param)].raw), n, c, stream_);
  // dX[n, k] = dY[n, c] W[c, k]: column-major dX^T = W^T dY^T.
  STOKER_GPU(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, k, n, c, &kOne, w.compute,
                          cuda_type(dtype_), k, dy, cuda_type(dtype_), c, &beta_dx,
                          tensors_[size_t(l.inputs[0])].dact, cuda_type(dtype_), k, compute,
                          CUBLAS_GEMM_DEFAULT));
}

void CudnnNet::forward(bool train) {
  for (size_t i = 0; i < net_.layers.size(); ++i) {
    const Layer& l = net_.layers[i];
    GpuLayer& g = layers_[i];
    const GpuTensor& x = tensors_[size_t(l.inputs[0])];
    GpuTensor& y = tensors_[size_t(l.output)];
    switch (l.kind) {
      case LayerKind::conv:
        STOKER_GPU(cudnnConvolutionForward(
            cudnn_, &kOne, g.conv.x.get(), x.act, g.conv.w.get(), params_[size_t(l.weight)].compute,
            g.conv.desc(ConvPass::forward), g.conv.fwd, workspace_.get(), workspace_.bytes(),
            &kZero, g.conv.y.get(), y.act));
        break;
      case LayerKind::batchnorm:
        if (!train)
          STOKER_GPU(cudnnBatchNormalizationForwardInference(
              cudnn_, CUDNN_BATCHNORM_SPATIAL, &kOne, &kZero, x.desc.get(), x.act, y.desc.get(),
              y.act, g.bn.get(), params_[size_t(l.weight)].value.get(),
              params_[size_t(l.bias_param)].value.get(),
              params_[size_t(l.running_mean)].value.get(),
              params_[size_t(l.running_var)].value.get(), l.eps));
        else if (g.call != BnCall::add_relu)  // that one runs at its add
          bn_forward_train(l, g);
        break;
      case LayerKind::relu:
        if (!(train && relu_fused_[i])) relu_forward(dtype_, x.act, y.act, y.elements, stream_);
        break;
      case LayerKind::add:
        if (train && g.fused_bn >= 0)
          bn_forward_train(net_.layers[size_t(g.fused_bn)], layers_[size_t(g.fused_bn)]);
        else
          add_forward(dtype_, x.act, tensors_[size_t(l.inputs[1])].act, y.act, y.elements, stream_);
        break;
      case LayerKind::maxpool:
      case LayerKind::global_avgpool:
        STOKER_GPU(cudnnPoolingForward(cudnn_, g.pool.get(), &kOne, x.desc.get(), x.act, &kZero,
                                       y.desc.get(), y.act));
        break;
      case LayerKind::fc:
        fc_forward(l);
        break;
    }
  }
}

// A batch norm in training, batch statistics and the running-statistics update (torch's
// momentum, unbiased variance), by the call set_fusion chose: y = bn(x), relu(bn(x)) into the
// ReLU's output (the same memory), or relu(bn(x) + z) into the ReLU after the add.
void CudnnNet::bn_forward_train(const Layer& l, GpuLayer& g) {
  const GpuTensor& x = tensors_[size_t(l.inputs[0])];
  const GpuTensor& y = tensors_[size_t(g.call == BnCall::add_relu ? g.fused_out : l.output)];
  const void* scale = params_[size_t(l.weight)].value.get();
  const void* bias = params_[size_t(l.bias_param)].value.get();
  void* mean = params_[size_t(l.running_mean)].value.get();
  void* var = params_[size_t(l.running_var)].value.get();
  if (g.call == BnCall::plain) {
    STOKER_GPU(cudnnBatchNormalizationForwardTraining(
        cudnn_, bn_mode_, &kOne, &kZero, x.desc.get(), x.act, y.desc.get(), y.act, g.bn.get(),
        scale, bias, l.momentum, mean, var, l.eps, g.save_mean.get(), g.save_invvar.get()));
    return;
  }
  const cudnnBatchNormOps_t ops = bn_ops(g.call);
  const GpuTensor* z = g.call == BnCall::add_relu ? &tensors_[size_t(g.z)] : nullptr;
  STOKER_GPU(cudnnBatchNormalizationForwardTrainingEx(
      cudnn_, bn_mode_, ops, &kOne, &kZero, x.desc.get(), x.act, z ? z->desc.get() : nullptr,
      z ? z->act : nullptr, y.desc.get(), y.act, g.bn.get(), scale, bias, l.momentum, mean, var,
      l.eps, g.save_mean.get(), g.save_invvar.get(),
      ops == CUDNN_BATCHNORM_OPS_BN ? nullptr : relu_desc_.get(), workspace_.get(),
      workspace_.bytes(), g.reserve.get(), g.reserve.bytes()));
}

// Its backward: dx (+)= by `beta`, the scale and bias gradients written; the fused forms take
// y and dy at the ReLU's output and apply the ReLU's gradient, add_relu also writes dz.
void CudnnNet::bn_backward(const Layer& l, GpuLayer& g, float beta) {
  const GpuTensor& x = tensors_[size_t(l.inputs[0])];
  const GpuTensor& y = tensors_[size_t(g.call == BnCall::add_relu ? g.fused_out : l.output)];
  const void* scale = params_[size_t(l.weight)].value.get();
  void* dscale = params_[size_t(l.weight)].raw;
  void* dbias = params_[size_t(l.bias_param)].raw;
  if (g.call == BnCall::plain) {
    STOKER_GPU(cudnnBatchNormalizationBackward(
        cudnn_, bn_mode_, &kOne, &beta, &kOne, &kZero, x.desc.get(), x.act, y.desc.get(), y.dact,
        x.desc.get(), x.dact, g.bn.get(), scale, dscale, dbias, l.eps, g.save_mean.get(),
        g.save_invvar.get()));
    return;
  }
  const cudnnBatchNormOps_t ops = bn_ops(g.call);
  const GpuTensor* z = g.call == BnCall::add_relu ? &tensors_[size_t(g.z)] : nullptr;
  // The plain form reads no y; the fused ones read the ReLU's output.
  const bool fused = ops != CUDNN_BATCHNORM_OPS_BN;
  STOKER_GPU(cudnnBatchNormalizationBackwardEx(
      cudnn_, bn_mode_, ops, &kOne, &beta, &kOne, &kZero, x.desc.get(), x.act,
      fused ? y.desc.get() : nullptr, fused ? y.act : nullptr, y.desc.get(), y.dact,
      z ? z->desc.get() : nullptr, z ? z->dact : nullptr, x.desc.get(), x.dact, g.bn.get(), scale,
      params_[size_t(l.bias_param)].value.get(), dscale, dbias, l.eps, g.save_mean.get(),
      g.save_invvar.get(), fused ? relu_desc_.get() : nullptr, workspace_.get(), workspace_.bytes(),
      g.reserve.get(), g.reserve.bytes()));
}

void CudnnNet::loss_and_backward() {
  const int64_t classes = net_.num_classes;
  LossArgs a;
  a.logits = logits_device();
  a.labels = labels();
  a.n = config_.batch;
  a.classes = classes;
  a.smoothing = config_.label_smoothing;
  a.scale = loss_scale_device();
  a.loss = loss_device();
  a.per_sample = per_sample_.as<float>();
  a.dlogits = static_cast<float*>(tensors_.back().dact);
  a.dlogits_lowp = dtype_ == DType::f32 ? nullptr : dlogits_lowp_.get();
  a.lowp = dtype_;
  softmax_cross_entropy(a, stream_);

  std::fill(grad_written_.begin(), grad_written_.end(), false);
  grad_written_.back() = true;
  // Data parallelism: each bucket is finished and its all-reduce started as soon as the
  // backward has written it, while the backward goes on.
  const bool reduce = !buckets_.empty();
  size_t next_bucket = 0;
  if (reduce) STOKER_GPU(cudaMemsetAsync(overflow_.get(), 0, sizeof(int32_t), stream_));
  for (size_t i = net_.layers.size(); i-- > 0;) {
    const Layer& l = net_.layers[i];
    GpuLayer& g = layers_[i];
    const int in = l.inputs[0];
    const GpuTensor& x = tensors_[size_t(in)];
    const GpuTensor& y = tensors_[size_t(l.output)];
    // The first gradient reaching a tensor is written, later ones added (a block's input
    // feeds its first conv and its shortcut).
    const float beta = grad_written_[size_t(in)] ? 1.0f : 0.0f;
    switch (l.kind) {
      case LayerKind::conv: {
        const GpuParam& w = params_[size_t(l.weight)];
        STOKER_GPU(cudnnConvolutionBackwardFilter(
            cudnn_, &kOne, g.conv.x.get(), x.act, g.conv.y.get(), y.dact,
            g.conv.desc(ConvPass::backward_weights), g.conv.bwd_filter, workspace_.get(),
            workspace_.bytes(), &kZero, g.conv.w.get(), w.raw));
        if (g.conv.has_bwd_data)
          STOKER_GPU(cudnnConvolutionBackwardData(
              cudnn_, &kOne, g.conv.w.get(), w.compute, g.conv.y.get(), y.dact,
              g.conv.desc(ConvPass::backward_data), g.conv.bwd_data, workspace_.get(),
              workspace_.bytes(), &beta, g.conv.x.get(), x.dact));
        break;
      }
      case LayerKind::batchnorm:
        if (g.call != BnCall::add_relu) bn_backward(l, g, beta);  // that one ran at its add
        break;
      case LayerKind::relu:
        // Fused: the batch norm's backward applies the ReLU's. In place (aliased): dx is
        // dy's own memory, written for the first time.
        if (relu_fused_[i]) break;
        relu_backward(dtype_, y.act, y.dact, x.dact, y.elements, beta != 0.0f && y.alias_of < 0,
                      stream_);
        break;
      case LayerKind::add:
        if (g.fused_bn >= 0) {
          // The fused BN + add + ReLU: dx of the BN's input and dz of the shortcut at once.
          const Layer& bn = net_.layers[size_t(g.fused_bn)];
          const int bn_in = bn.inputs[0];
          bn_backward(bn, layers_[size_t(g.fused_bn)], grad_written_[size_t(bn_in)] ? 1.0f : 0.0f);
          grad_written_[size_t(bn_in)] = true;
          grad_written_[size_t(l.inputs[1])] = true;
          break;
        }
        for (int k = 0; k < 2; ++k) {
          const int t = l.inputs[size_t(k)];
          // In place over the branch (plan_tensors): its gradient is dy's own memory.
          if (tensors_[size_t(t)].dact != y.dact)
            pass_gradient(dtype_, y.dact, tensors_[size_t(t)].dact, y.elements,
                          grad_written_[size_t(t)], stream_);
          grad_written_[size_t(t)] = true;
        }
        break;
      case LayerKind::maxpool:
        // Not cuDNN's: its max-pool backward adds with atomics (not reproducible).
        maxpool_backward(dtype_, nhwc_, g.pool_shape, x.act, y.dact, x.dact, g.pool_offsets.get(),
                         beta != 0.0f, stream_);
        break;
      case LayerKind::global_avgpool:
        STOKER_GPU(cudnnPoolingBackward(cudnn_, g.pool.get(), &kOne, y.desc.get(), y.act,
                                        y.desc.get(), y.dact, x.desc.get(), x.act, &beta,
                                        x.desc.get(), x.dact));
        break;
      case LayerKind::fc:
        fc_backward(l, beta);
        break;
    }
    if (in != 0) grad_written_[size_t(in)] = true;
    while (next_bucket < buckets_.size() && buckets_[next_bucket].last_layer >= int(i))
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

void CudnnNet::update() {
  sgd_and_cast(slots_dev_.as<TensorSlot>(), chunks_dev_.as<TensorChunk>(), chunk_count_,
               hyper_device(), overflow_.as<int32_t>(), true, stream_);
  finish_step(slots_dev_.as<TensorSlot>(), int32_t(slots_.size()), hyper_device(),
              overflow_.as<int32_t>(), loss_scale_device(), dtype_ == DType::f16, skipped_device(),
              stream_);
}

void CudnnNet::cast_weights() {
  sgd_and_cast(slots_dev_.as<TensorSlot>(), chunks_dev_.as<TensorChunk>(), chunk_count_,
               hyper_device(), nullptr, false, stream_);
}

std::vector<float> CudnnNet::debug_tensor(int id, bool gradient) const {
  STOKER_CHECK(id >= 0 && size_t(id) < tensors_.size());
  if (id == 0 || (gradient ? aliased(id) || !grad_kept_[size_t(id)] : overwritten(id))) return {};
  // A fused batch norm's output gradient (the ReLU's gradient applied) is never stored: its
  // memory holds the gradient at the ReLU's output.
  if (gradient && id > 0) {
    const Layer& producer = net_.layers[size_t(id) - 1];
    if (producer.kind == LayerKind::batchnorm && layers_[size_t(id) - 1].call != BnCall::plain &&
        layers_[size_t(id) - 1].call != BnCall::ex)
      return {};
  }
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
