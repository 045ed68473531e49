// SPDX-License-Identifier: Apache-2.0
// A whole network planned on cuDNN + cuBLAS for one batch and image size, as dnnl_net.h is
// for oneDNN: every descriptor, algorithm and buffer made once (activations and their
// gradients, f32 master parameters in torch's plain layout with their gradients and momentum,
// low-precision / NHWC weight copies, one shared workspace), then programs that only enqueue
// on the compute stream: forward (training or eval), loss + backward + gradient finish, and
// the multi-tensor SGD update. No host synchronisation, no allocation after planning.
// cuda_backend.cc adds the streams' choreography around it (input_staging.h, step_ring.h,
// graph_capture.h).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "models/network.h"
#include "models/shapes.h"
#include "train/backend.h"
#include "train/gpu/conv_cudnn.h"
#include "train/gpu/cublas_linear.h"
#include "train/gpu/cudnn_batchnorm.h"
#include "train/gpu/cudnn_fe_graphs.h"
#include "train/gpu/cudnn_pool.h"
#include "train/gpu/gpu_memory.h"
#include "train/gpu/gpu_policy.h"
#include "train/gpu/handles.h"
#include "train/gpu/kernels/kernels.h"
#include "train/gpu/plan_cache.h"

namespace stoker::gpu {

struct GpuTensor {
  DeviceBuffer storage, grad_storage;  // empty when aliased to another tensor's
  void* act = nullptr;                 // compute dtype (logits: f32)
  void* dact = nullptr;                // its gradient; null for the images
  int64_t elements = 0;                // batch x per-image elements
  int alias_of = -1;                   // a ReLU computed in place over this tensor id
};

// A layer's plans (shared with the layers of its shape: OpPlans) and its own buffers.
struct GpuLayer {
  std::shared_ptr<const ConvPlan> conv;  // conv
  std::shared_ptr<const BnPlan> bn;      // batchnorm
  std::shared_ptr<const PoolPlan> pool;  // maxpool, global_avgpool
  LinearShape linear;                    // fc
  DeviceBuffer save_mean;                // batchnorm: batch statistics for the backward (f32, C)
  DeviceBuffer save_invvar;
  DeviceBuffer reserve;         // batchnorm: the Ex forms' reserve space (bn->reserve as planned)
  BnCall call = BnCall::plain;  // batchnorm: how it runs in training (set_fusion)
  // batchnorm under add_relu: the residual z and the ReLU's output (tensor ids).
  int z = -1, fused_out = -1;
  // conv_stats (set_fusion): a conv writes the sums of batch norm layer `stats_bn`, into that
  // batch norm's fe_stats (FeBnStats's six c-float vectors).
  int stats_bn = -1;
  // conv_prologue (set_fusion): a conv applies batch norm layer `prologue_bn` (its eq_scale,
  // eq_bias and ReLU) to that batch norm's input, which it reads instead of its own.
  int prologue_bn = -1;
  // conv_stats: the conv's or batch norm's frontend graphs, planned (set_fusion).
  std::shared_ptr<const FeConvPlan> fe_conv;
  std::shared_ptr<const FeBnPlan> fe_bn;
  DeviceBuffer fe_stats;
  // batchnorm under conv_stats with its ReLU, not applied in its reader: the ReLU's mask
  // (fe_mask_bytes).
  DeviceBuffer fe_mask;
  DeviceBuffer pool_offsets;  // maxpool: its backward's scratch (pool->offsets_bytes)
};

struct GpuParam {
  DeviceBuffer value, momentum;  // f32, torch's layout (momentum: trainable only)
  float* grad = nullptr;         // f32, torch's layout, in the gradient arena (trainable only)
  DeviceBuffer raw_storage;      // the library's gradient when it is not `grad`
  DeviceBuffer compute_storage;  // the copy the layers read when it is not `value`
  void* raw = nullptr;
  void* compute = nullptr;  // what the layer reads: compute_storage or value
  int slot = -1;            // index into the optimiser's slots (trainable only)
  int64_t count = 0;        // num_batches_tracked, on the host
};

// The library ops' plans by shape (op_shapes.h's keys), one set per backend (its device and
// handle), kept across the net's reshapes (a size schedule goes back to sizes it planned
// before): the frontend's life cycle for every op, plan once per shape, then execute.
struct OpPlans {
  PlanCache<const ConvPlan> conv;
  PlanCache<const BnPlan> batchnorm;
  PlanCache<const PoolPlan> pool;
};

// The library handles a net plans and runs with, made once by the backend and kept across
// its reshapes (each cudnnCreate / cublasCreate pair leaves host memory behind: the first H200
// run saw the host heap grow by 1.26 MB over 16 reshapes that made new handles), with the
// cuBLAS workspace that graph capture needs (no allocation while capturing).
struct GpuLibraries {
  CudnnHandle cudnn;
  CublasHandle cublas;
  DeviceBuffer cublas_workspace;
  // The cuDNN frontend's graphs, planned once per shape (null in a build without it).
  std::shared_ptr<FeGraphs> fe_graphs = make_fe_graphs();
  std::shared_ptr<OpPlans> plans = std::make_shared<OpPlans>();
  // Creates both on the current device, bound to `stream`.
  explicit GpuLibraries(cudaStream_t stream);
};

class CudnnNet {
 public:
  // Plans everything on the current device, for a plan that passed check_plan (Backend's
  // constructor and reshape() check it first); `compute` is the stream every program runs on.
  // stoker::Error naming the layer when cuDNN or cuBLAS rejects a shape or runs out of memory.
  CudnnNet(const Network& net, const BackendConfig& config, cudaStream_t compute,
           const GpuLibraries& libraries);
  ~CudnnNet();
  CudnnNet(const CudnnNet&) = delete;
  CudnnNet& operator=(const CudnnNet&) = delete;

  // The programs (enqueue only).
  void forward(bool train);  // from tensor 0 (the converted input) to the logits
  // Loss (into loss_device), every gradient, unscale + overflow; with a collective of world
  // > 1 also the gradients' sum over the ranks (buckets all-reduced on a communication stream
  // as the backward finishes them, joined back and scaled by 1 / world before returning).
  void loss_and_backward();
  void update();        // SGD on the masters (skipped on overflow), compute copies
  void cast_weights();  // compute copies from the masters (after a load)
  void count_batch();   // num_batches_tracked += 1 on every batch norm (host)

  // Device locations the backend copies in and out around the programs.
  void* input() const { return tensors_[0].act; }
  int32_t* labels() const { return labels_.as<int32_t>(); }
  float* loss_device() const { return status_.as<float>(); }
  int32_t* skipped_device() const { return status_.as<int32_t>() + 1; }
  SgdHyper* hyper_device() const { return hyper_.as<SgdHyper>(); }
  const float* logits_device() const { return static_cast<const float*>(tensors_.back().act); }
  LossScale* loss_scale_device() const { return scale_.as<LossScale>(); }

  // Parameters (Network::params order) for load, save and gradients; momentum flags live
  // in the optimiser slots (device), read and written here. Synchronous.
  const GpuParam& param(int i) const { return params_[size_t(i)]; }
  GpuParam& param(int i) { return params_[size_t(i)]; }
  bool has_momentum(int i) const;
  void set_momentum_flags(const std::vector<bool>& flags);  // by param index
  // f16's dynamic loss scale (step_math.h; other precisions keep 1): torch's initial state,
  // or one restored from a checkpoint, and the current one. Synchronous.
  void reset_loss_scale();
  void set_loss_scale(const LossScale& s);
  LossScale loss_scale() const;
  // Host <-> device copies ordered with the compute stream (which does not synchronise with
  // the legacy default stream that plain cudaMemcpy uses); return when done.
  void upload(void* dst, const void* src, size_t bytes) const;
  void download(void* dst, const void* src, size_t bytes) const;

  // Tensor `id` (or its gradient) as plain NCHW f32 (Backend::debug_tensor): empty for the
  // images (the staged batch), a value computed over in place, and an aliased gradient.
  // Synchronous.
  std::vector<float> debug_tensor(int id, bool gradient) const;
  // A ReLU output computed in place over its input (`aliased`): the input's values are the
  // ReLU's after the forward (`overwritten`), and the output's gradient memory holds the
  // input's gradient after the backward.
  bool aliased(int id) const { return tensors_[size_t(id)].alias_of >= 0; }
  bool overwritten(int id) const;

  const Network& network() const { return net_; }
  const BackendConfig& config() const { return config_; }
  DType dtype() const { return dtype_; }
  bool nhwc() const { return nhwc_; }
  const std::vector<ConvChoice>& choices() const { return choices_; }
  bool bn_relu_fused() const { return fusion_ >= kFuseRelu; }
  bool bn_add_fused() const { return fusion_ >= kFuseAddRelu; }
  bool bn_persistent() const { return bn_mode_ == CUDNN_BATCHNORM_SPATIAL_PERSISTENT; }
  // conv_stats: how many convs write their batch norm's statistics (conv_prologue: apply the
  // batch norm before them), and the first refusal.
  int conv_stats_fused() const;
  int conv_prologue_fused() const;
  const std::string& conv_stats_refusal() const { return fe_refusal_; }
  // The plans the layers share (OpPlans): "plans 23/53 conv, 12/53 batchnorm, 2/2 pool"
  // (distinct plans / layers of each kind).
  std::string plans_shared() const;
  size_t workspace_bytes() const { return workspace_.bytes(); }
  size_t device_bytes() const { return device_bytes_; }
  // The stream the gradient all-reduces run on (data parallelism), else null.
  cudaStream_t comm_stream() const { return comm_; }
  const std::string& device_name() const { return device_name_; }

 private:
  void plan_tensors();
  void plan_gradients(const std::vector<int>& root, const std::vector<int64_t>& bytes);
  void plan_params();
  void plan_layers();
  void plan_optimizer();
  void* alloc(DeviceBuffer& b, size_t bytes);
  void trial_step();
  // Each layer's plans (from OpPlans) and buffers; a batch norm's plan alone (again after
  // trial_step leaves the persistent mode).
  void plan_layer(const Layer& l, GpuLayer& g, const std::string& key_prefix,
                  const DeviceBuffer& find_ws, size_t& workspace);
  std::shared_ptr<const BnPlan> bn_plan(const Layer& l) const;
  // One op of lowering_ (train/lowering.h): its layers' forward, or its backward with the
  // gradient of its first input written or added to (grad_written_). Each binds the op's
  // tensors and parameters to the free functions named like train/reference/ (conv_cudnn.h,
  // cudnn_batchnorm.h, cudnn_pool.h, cublas_linear.h, kernels.h; cudnn_fe_graphs.h under
  // conv_stats) and calls them: cudnn_net_ops.cc.
  void forward_op(const Op& op, bool train);
  void backward_op(const Op& op);
  void forward_batchnorm_op(const Op& op, bool train);
  void backward_add(const Layer& l);
  void loss_forward();
  GpuExec exec() const;
  BnBuffers bn_buffers(const Op& op) const;
  // Fusion levels, each a fallback of the one above (trial_step): the ops (lowering_) and
  // which BN call each batch norm makes in training (needs planned layers).
  // kFuseStats adds the lowering's conv_stats (cuDNN frontend graphs) where --fusions asks.
  static constexpr int kFusePlain = 0, kFuseEx = 1, kFuseRelu = 2, kFuseAddRelu = 3, kFuseStats = 4;
  void set_fusion(int level);
  // conv_stats (cudnn_fe_graphs.h): whether the frontend runs this conv's or batch norm's
  // graphs (accumulating fe_workspace_), the shapes it plans, the forwards and the backward.
  bool accept_conv_stats(const Op& op);
  std::shared_ptr<const FeConvPlan> fe_conv_plan(const Op& op, std::string& why);
  std::shared_ptr<const FeBnPlan> fe_bn_plan(const Op& op, std::string& why);
  FeConvShape fe_conv_shape(const Layer& l, bool prologue) const;
  FePrologue fe_prologue(const GpuLayer& conv) const;
  FeBnShape fe_bn_shape(const Op& op) const;
  FeBnStats fe_stats(const GpuLayer& bn) const;
  void forward_conv_stats(const Layer& l, GpuLayer& g);
  void backward_conv_prologue(const Layer& l, GpuLayer& g, float beta);
  void forward_bn_from_stats(const Op& op);
  void backward_bn_from_stats(const Op& op, float beta);
  void plan_buckets();  // data parallelism: buckets, their finish chunks, the stream
  void start_bucket(size_t b);
  void join_buckets();
  // Where the gradient finish flags a non-finite gradient: the overflow flag under f16 (the
  // step is skipped, gpu_policy.h), null otherwise (the step applies, as torch's).
  int32_t* nonfinite_flag() const;

  Network net_;
  BackendConfig config_;
  DType dtype_ = DType::f32;
  bool nhwc_ = false;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;  // the backend's (GpuLibraries)
  cublasHandle_t cublas_ = nullptr;
  FeGraphs* fe_ = nullptr;    // the backend's (GpuLibraries), null without the frontend
  OpPlans* plans_ = nullptr;  // the backend's (GpuLibraries)
  size_t fe_workspace_ = 0;   // the conv_stats graphs' largest workspace (set_fusion)
  std::string fe_refusal_;    // the first conv_stats instance refused, and why
  cudnnBatchNormMode_t bn_mode_ = CUDNN_BATCHNORM_SPATIAL;
  int fusion_ = kFusePlain;  // NHWC: cuDNN's persistent Ex kernels, fused (set_fusion, bn_start)
  // The ops the programs run (set_fusion): a fused pattern only where cuDNN offers its Ex
  // form for the layer's shapes and plan_tensors put its ReLU (and add) in place.
  Lowering lowering_;
  std::string device_name_;
  std::vector<ActShape> shapes_;
  std::vector<int> readers_;  // per tensor id: how many layers read it
  std::vector<GpuTensor> tensors_;
  std::vector<GpuLayer> layers_;
  std::vector<GpuParam> params_;
  std::vector<ConvChoice> choices_;
  std::vector<bool> grad_written_;  // scratch of the backward (planned size)
  // Per tensor: not written by the training forward (set_fusion): a frontend batch norm's hidden
  // output, an apply_in_reader op's output.
  std::vector<bool> unwritten_;
  std::vector<DeviceBuffer> grad_slots_;  // the activation gradients' memory (plan_gradients)
  std::vector<bool> grad_kept_;           // per tensor: its gradient still there after the backward
  DeviceBuffer labels_, status_, hyper_, scale_, overflow_, per_sample_, dlogits_lowp_;
  DeviceBuffer workspace_;
  // Optimiser: slots of the trainable tensors, their chunks (all; those needing a finish).
  std::vector<TensorSlot> slots_;
  DeviceBuffer slots_dev_, chunks_dev_, finish_chunks_dev_;
  int64_t chunk_count_ = 0, finish_chunk_count_ = 0;
  // Every trainable gradient in one arena, in the order the backward finishes them (layers
  // from last to first), so that a bucket of data parallelism is one contiguous range.
  DeviceBuffer grad_arena_;
  size_t grad_floats_ = 0;
  // Data parallelism (world > 1; planned after trial_step, which reduces nothing): bucket b
  // holds arena floats [offset, offset + floats) and is complete once the backward has run
  // op `last_op` of lowering_ (it runs the ops from the last); its finish chunks are [chunk_begin,
  // chunk_begin + chunk_count) of bucket_chunks_dev_. comm_ runs the all-reduces; each bucket's
  // `ready` event forks it from the compute stream, `reduced_` joins it back.
  struct Bucket {
    size_t offset = 0, floats = 0;
    int last_op = 0;
    int64_t chunk_begin = 0, chunk_count = 0;
    EventHandle ready;
  };
  std::vector<Bucket> buckets_;
  DeviceBuffer bucket_chunks_dev_;
  StreamHandle comm_;
  EventHandle reduced_;
  size_t device_bytes_ = 0;
};

}  // namespace stoker::gpu
