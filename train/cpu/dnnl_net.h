// SPDX-License-Identifier: Apache-2.0
// A whole network planned on oneDNN for one batch and image size: every tensor in the layout
// its producer chose (format_tag::any), every primitive created once, every buffer allocated
// once. The result is three straight-line programs (training forward, eval forward, backward)
// of primitive executions and a few host steps (running statistics, the loss), which
// cpu_backend.cc runs. Reorders happen only at the edges: the images in, the logits out,
// parameters between torch's layout and the primitives' (load, save, gradients), and
// wherever two primitives disagree on a weight layout (counted in `reorders_per_step`).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/network.h"
#include "models/shapes.h"
#include "train/backend.h"
#include "train/lowering.h"

namespace stoker::cpu {

// The patterns the planner fuses (BackendCaps::fusions): bn_relu as oneDNN's fuse_norm_relu;
// bn_add_relu as the batch norm, then one binary add with a ReLU post-op in place over its
// output (oneDNN 3.2 has no fuse_norm_add_relu on CPUs).
inline constexpr uint32_t kCpuFusions = kFuseBnRelu | kFuseBnAddRelu;

// One instruction of a program: a primitive with its arguments, or a host function.
struct Step {
  std::string what;  // "layer1.0.conv1 forward", for the plan report and errors
  std::string impl;  // oneDNN's implementation name ("brg:avx512_core", "jit_1x1:..."), "host"
  dnnl::primitive prim;
  std::unordered_map<int, dnnl::memory> args;  // owns the memories
  std::vector<dnnl_exec_arg_t> exec_args;      // the same, as run() passes them to oneDNN
  dnnl::memory::desc scratchpad;  // the primitive's; bound to the shared buffer after planning
  std::function<void()> host;     // runs instead of prim when set
};

// A parameter or buffer (Network::params index). f32 tensors live in `value`, in the layout
// of the primitive that reads them (blocked for conv weights); the gradient and momentum
// buffers share that layout, so SGD is elementwise over the raw buffer (padding stays 0).
struct ParamMemory {
  dnnl::memory value, grad, momentum;  // grad and momentum only when trainable
  dnnl::memory::desc plain;            // torch's layout, for load and save
  int64_t count = 0;                   // num_batches_tracked (i64 params); value is empty then
};

// What the backward of a layer needs from its training forward.
struct LayerMemory {
  // Forward primitive descriptors: hints for the backward ones.
  dnnl::convolution_forward::primitive_desc conv_fwd;
  dnnl::algorithm conv_algo = dnnl::algorithm::convolution_direct;  // what conv_fwd uses
  dnnl::convolution_backward_weights::primitive_desc conv_bww;
  dnnl::batch_normalization_forward::primitive_desc bn_fwd;
  dnnl::eltwise_forward::primitive_desc relu_fwd;
  dnnl::pooling_forward::primitive_desc pool_fwd;
  dnnl::inner_product_forward::primitive_desc fc_fwd;
  dnnl::inner_product_backward_weights::primitive_desc fc_bww;
  dnnl::memory mean, variance;  // batchnorm: batch statistics (f32, C)
  dnnl::memory workspace;       // maxpool: where each maximum came from
  dnnl::memory fwd_weights;     // conv/fc: the weights in forward layout when not the master's
  // Sync BN: the per-channel terms that turn the backward's dx (global statistics taken as
  // constants) into the true one, dx += a * x + b (dnnl_net.cc, backward_batchnorm).
  dnnl::memory sync_a, sync_b;
};

// Data parallelism: trainable gradients that the backward finishes together, all-reduced as
// one contiguous range of DnnlNet::grad_arena as soon as the last of them is written.
struct GradBucket {
  size_t offset = 0;        // bytes into grad_arena
  size_t floats = 0;        // the range's length, alignment padding (zeros) included
  std::vector<int> params;  // Network::params indices, in backward order
};

// Not copyable or movable: host steps and the SGD table hold pointers into it, so it lives
// behind a std::unique_ptr from planning on.
struct DnnlNet {
  DnnlNet() = default;
  DnnlNet(const DnnlNet&) = delete;
  DnnlNet& operator=(const DnnlNet&) = delete;

  Network net;
  BackendConfig config;
  std::vector<ActShape> shapes;  // per tensor id, per image
  dnnl::engine engine;
  dnnl::stream stream;
  dnnl::memory::data_type act_type = dnnl::memory::data_type::f32;

  // Per tensor id: layout, value and gradient (no gradient for the images, tensor 0).
  std::vector<dnnl::memory::desc> md;
  std::vector<dnnl::memory> act, dact;
  // The ops planned (train/lowering.h), fused where kCpuFusions and the config allow. A
  // bn_relu is one primitive (fuse_norm_relu): the batch norm's output and the ReLU's are one
  // memory (and one gradient).
  Lowering lowering;
  // Per tensor id: whether dact still holds this tensor's gradient after the backward
  // (gradients share memory where the backward allows, see dnnl_net.cc).
  std::vector<bool> grad_final;
  std::vector<ParamMemory> params;
  std::vector<LayerMemory> layers;
  // Every trainable gradient lives in this one buffer (u8), in the order the backward
  // finishes them, each at a 64-byte boundary; zeroed, so padding stays zero.
  dnnl::memory grad_arena;
  size_t grad_arena_bytes = 0;
  // With config.collective of world > 1: the buckets, and a host step after the backward
  // step that finishes each one calls bucket_ready(index) (the backend sets it).
  std::vector<GradBucket> buckets;
  std::function<void(size_t bucket)> bucket_ready;

  dnnl::memory images_user;       // plain NCHW or NHWC f32: the caller's images, or images_f32
  std::vector<float> images_f32;  // u8 input normalised here (empty for f32 input)
  dnnl::memory logits_plain;      // N x classes f32, plain
  dnnl::memory logp;              // log-softmax of the logits, plain
  dnnl::memory dlogits_plain;
  std::vector<int32_t> labels;  // the batch's labels, copied in before the forward
  float loss = 0;
  // A batch norm's statistics of this forward were NaN or infinite (DnnlNet's forward says why
  // that makes the loss NaN); read and cleared by the loss.
  bool nonfinite_statistics = false;

  std::vector<Step> forward_train, forward_eval, backward;
  int reorders_per_step = 0;        // layout conversions inside a training step (edges excluded)
  size_t scratchpad_bytes = 0;      // the one buffer all primitives share
  dnnl::memory scratch_storage;     // u8, scratchpad_bytes
  dnnl::memory accumulate_storage;  // u8: a second gradient for tensors read twice
};

// Plans everything, for a plan that passed check_plan (Backend's constructor and reshape()
// check it first). stoker::Error naming the layer when oneDNN rejects a shape, or naming the
// unknown config.conv_algorithm.
std::unique_ptr<DnnlNet> plan_dnnl_net(const Network& net, const BackendConfig& config);

// Runs a program on the net's stream and waits for it. With `activity`, appends one record
// per primitive and host step (steady clock around each: oneDNN's CPU stream executes
// synchronously), tagged with `step`.
void run(DnnlNet& d, std::vector<Step>& program, std::vector<ActivityRecord>* activity = nullptr,
         int64_t step = -1);

// Tensor `id` (or its gradient) in plain NCHW f32 (Backend::debug_tensor): empty for a tensor
// hidden in a fused op (its memory holds the op's output), the images' gradient, and a gradient
// whose memory the backward reused for another tensor's.
std::vector<float> debug_tensor(DnnlNet& d, int id, bool gradient);

}  // namespace stoker::cpu
