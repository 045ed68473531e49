// SPDX-License-Identifier: Apache-2.0
// The conv_stats pattern (train/lowering.h, kFuseConvStats; issue 45) as cuDNN frontend graphs:
// a convolution that also writes its output's per-channel sum and sum of squares (genstats),
// the batch norm's finalize (bn_finalize: scale and bias from those sums, the saved mean and
// inverse deviation, the running statistics), its apply (y = [relu](x * scale + bias [+ z]),
// with the ReLU's mask, one bit an element), and its backward with the ReLU's gradient in
// front (dz = dy * mask; dbn). Each graph is
// planned once per shape (PlanCache: validated, its execution plan built, its workspace sized)
// and then only executed (its plan held by the layer), on the handle's stream: capturable into a
// CUDA Graph. Named and ordered like train/reference/ (conv2d_forward, batchnorm_forward_train,
// batchnorm_backward), which they compute. NHWC f16 activations (cuDNN 9.19 plans no
// statistics epilogue for a bf16 convolution on sm_90: fe_graphs_test), f32 statistics and
// accumulation. Without the frontend's headers at build time (scripts/deps.sh fetches them),
// fe_graphs_built() is false and nothing here is planned.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "models/network.h"
#include "models/shapes.h"
#include "train/backend.h"
#include "train/lowering.h"

namespace stoker::gpu {

bool fe_graphs_built();

// A convolution: input n x c x h x w (NHWC), k filters c x r x s (KRSC), stride, padding.
// prologue (kFuseConvPrologue): its input is relu(x * scale + bias) of the x it is given (the
// batch norm it applies, scale and bias per channel of x in the activations' dtype); its
// backward is then frontend graphs too (the data gradient with the ReLU's, the weights').
struct FeConvShape {
  int64_t n = 0, c = 0, h = 0, w = 0, k = 0, r = 0, s = 0;
  int stride = 1, pad = 0;
  DType dtype = DType::f16;
  bool prologue = false;
};

// A batch norm's input n x c x h x w (NHWC) and what follows it in its op: the residual add
// (bn_add_relu), the ReLU (bn_relu, bn_add_relu); torch's eps and momentum. prologue (a bn_relu
// whose reading conv applies it): it only finalizes, its eq_scale and eq_bias in the
// activations' dtype, and its backward receives the gradient at the ReLU's input.
struct FeBnShape {
  int64_t n = 0, c = 0, h = 0, w = 0;
  DType dtype = DType::f16;
  bool add = false, relu = false, prologue = false;
  float eps = 1e-5f, momentum = 0.1f;
};

// The shapes of a conv (`in`: its input's; `prologue`: the lowering's Op::prologue) and of a
// lowering's batch-norm op (`in`: its batch norm's input's), at `batch` images of `dtype`: one
// derivation for the backend and its tests.
FeConvShape fe_conv_shape(const Layer& conv, const ActShape& in, int64_t batch, DType dtype,
                          bool prologue);
FeBnShape fe_bn_shape(const Op& op, const Layer& bn, const ActShape& in, int64_t batch,
                      DType dtype);

// The graphs, built once per shape and kept (across a net's reshapes: the backend owns one).
class FeGraphs;
std::shared_ptr<FeGraphs> make_fe_graphs();  // null without the frontend

// An instance's graphs planned for its shape, which the functions below execute with no lookup:
// a conv's, its forward with statistics and under a prologue its two backward passes too; a
// batch norm's, finalize, apply (not under a prologue) and backward.
struct FeConvPlan;
struct FeBnPlan;
// The instance's plan when cuDNN runs all of its graphs for these shapes (built and cached on
// the way: asking again is a lookup), with the workspace the largest needs raised into
// `workspace`; null otherwise, and `why` says what refused.
std::shared_ptr<const FeConvPlan> fe_plan_conv_stats(FeGraphs& graphs, cudnnHandle_t handle,
                                                     const FeConvShape& conv, size_t& workspace,
                                                     std::string& why);
std::shared_ptr<const FeBnPlan> fe_plan_batchnorm(FeGraphs& graphs, cudnnHandle_t handle,
                                                  const FeBnShape& bn, size_t& workspace,
                                                  std::string& why);

// Planning for a GPU that is not there: cuDNN's deviceless path (cuDNN >= 9.11) runs the same
// heuristics, support checks and plan builds for the GPU that `json` describes (the device
// properties as fe::DeviceProperties::serialize writes them on that GPU: fe_device_json, which
// gpu_facts prints) at compute capability `sm_version` (90: H100, H200). What planning on that
// GPU would say, on a machine without one: empty when every graph of the shape is planned, else
// the first refusal and cuDNN's reason. fe_device_from_json throws stoker::Error with cuDNN's
// reason for properties it cannot read; fe_device_json for a device it cannot describe.
struct FeDevice;
std::shared_ptr<FeDevice> fe_device_from_json(const std::string& json, int sm_version);
std::string fe_device_json(int device);
std::string fe_plan_conv_stats_for(const FeDevice& device, const FeConvShape& conv);
std::string fe_plan_batchnorm_for(const FeDevice& device, const FeBnShape& bn);

// The bytes of a ReLU mask over `elements` elements (one bit each, 16-byte aligned).
inline size_t fe_mask_bytes(int64_t elements) {
  return size_t((elements + 127) / 128) * 16;
}

// Per-channel f32 buffers of one batch norm under conv_stats, each c floats.
struct FeBnStats {
  float* sum = nullptr;  // written by the conv's epilogue
  float* sq_sum = nullptr;
  // bn_finalize: gamma * inv_std, beta - mean * gamma * inv_std (bn.prologue: c values in the
  // activations' dtype, for the conv's prologue).
  float* eq_scale = nullptr;
  float* eq_bias = nullptr;
  float* next_mean = nullptr;  // bn_finalize's running statistics, copied over the running ones
  float* next_var = nullptr;
};

// A prologue's scale and bias (conv.prologue): the eq_scale and eq_bias of the batch norm it
// applies (FeBnStats of a bn.prologue batch norm).
struct FePrologue {
  const void* scale = nullptr;
  const void* bias = nullptr;
};

// y = conv(x', w) (N x K x OH x OW, NHWC), x' = x or relu(x * scale + bias) (conv.prologue),
// and stats.sum / sq_sum over N, OH, OW per channel.
void conv2d_forward_with_stats(const FeConvPlan& plan, cudnnHandle_t handle, const void* x,
                               const void* w, const FePrologue& prologue, void* y,
                               const FeBnStats& stats, void* workspace, size_t workspace_bytes);
// Under a prologue, its backward: dx = the data gradient of dy times the ReLU's gradient at
// x * scale + bias (N x C x H x W: the gradient at the batch norm's output, written); dw = the
// weights' gradient at x' (K x C x R x S, KRSC, the activations' dtype, written).
void conv2d_backward_data_relu(const FeConvPlan& plan, cudnnHandle_t handle, const void* dy,
                               const void* w, const void* x, const FePrologue& prologue, void* dx,
                               void* workspace, size_t workspace_bytes);
void conv2d_backward_weights_prologue(const FeConvPlan& plan, cudnnHandle_t handle, const void* dy,
                                      const void* x, const FePrologue& prologue, void* dw,
                                      void* workspace, size_t workspace_bytes);

// The batch norm in training from the conv's sums: finalize (batch mean, inverse deviation
// saved for the backward, running statistics updated with torch's momentum and unbiased
// variance), then y = [relu](x * eq_scale + eq_bias [+ z]), with the ReLU's mask (bn.relu;
// under bn.prologue the finalize alone: the reading conv applies it).
struct FeBnForward {
  const void* x = nullptr;  // the conv's output
  const void* z = nullptr;  // bn.add: the shortcut
  void* y = nullptr;        // the op's output
  void* mask = nullptr;     // bn.relu: y > 0, one bit an element (fe_mask_bytes)
  const float* gamma = nullptr;
  const float* beta = nullptr;
  float* running_mean = nullptr;
  float* running_var = nullptr;
  float* save_mean = nullptr;
  float* save_invvar = nullptr;
};
void batchnorm_forward_train(const FeBnPlan& plan, cudnnHandle_t handle, cudaStream_t stream,
                             const FeBnForward& args, const FeBnStats& stats, void* workspace,
                             size_t workspace_bytes);

// Its backward: g = bn.relu ? dy * mask : dy; dz = g (bn.add); dx, dgamma, dbeta = the
// batch norm's gradients at g (dx written, not added: the conv's output has no other reader).
// cuDNN's batch-norm backward engines take the ReLU's gradient in this form (a boolean mask),
// not as RELU_BWD of y, which no engine plans (the deviceless planning of fe_graphs_test).
struct FeBnBackward {
  const void* dy = nullptr;    // the gradient at the op's output
  const void* mask = nullptr;  // bn.relu: the forward's mask
  const void* x = nullptr;     // the batch norm's input
  const float* gamma = nullptr;
  const float* save_mean = nullptr;
  const float* save_invvar = nullptr;
  void* dx = nullptr;
  void* dz = nullptr;  // bn.add
  float* dgamma = nullptr;
  float* dbeta = nullptr;
};
void batchnorm_backward(const FeBnPlan& plan, cudnnHandle_t handle, const FeBnBackward& args,
                        void* workspace, size_t workspace_bytes);

}  // namespace stoker::gpu
