// SPDX-License-Identifier: Apache-2.0
// cudnn_fe_graphs.h in a build without the cuDNN frontend's headers: nothing is supported, so
// the lowering never asks for conv_stats here (cudnn_net.cc says why once).
#include "train/gpu/cudnn_fe_graphs.h"

#include "common/error.h"

namespace stoker::gpu {

class FeGraphs {};

namespace {

constexpr const char* kWhy =
    "this build has no cuDNN frontend (scripts/deps.sh fetches nvidia-cudnn-frontend)";

}  // namespace

bool fe_graphs_built() {
  return false;
}
std::shared_ptr<FeGraphs> make_fe_graphs() {
  return nullptr;
}

struct FeConvPlan {};
struct FeBnPlan {};

std::shared_ptr<const FeConvPlan> fe_plan_conv_stats(FeGraphs&, cudnnHandle_t, const FeConvShape&,
                                                     size_t&, std::string& why) {
  why = kWhy;
  return nullptr;
}

std::shared_ptr<const FeBnPlan> fe_plan_batchnorm(FeGraphs&, cudnnHandle_t, const FeBnShape&,
                                                  size_t&, std::string& why) {
  why = kWhy;
  return nullptr;
}

struct FeDevice {};
std::shared_ptr<FeDevice> fe_device_from_json(const std::string&, int) {
  fail("cuDNN device properties: {}", kWhy);
}
std::string fe_device_json(int) {
  fail("cuDNN device properties: {}", kWhy);
}
std::string fe_plan_conv_stats_for(const FeDevice&, const FeConvShape&) {
  return kWhy;
}
std::string fe_plan_batchnorm_for(const FeDevice&, const FeBnShape&) {
  return kWhy;
}

void conv2d_forward_with_stats(const FeConvPlan&, cudnnHandle_t, const void*, const void*,
                               const FePrologue&, void*, const FeBnStats&, void*, size_t) {
  fail("conv2d_forward_with_stats: {}", kWhy);
}

void conv2d_backward_data_relu(const FeConvPlan&, cudnnHandle_t, const void*, const void*,
                               const void*, const FePrologue&, void*, void*, size_t) {
  fail("conv2d_backward_data_relu: {}", kWhy);
}

void conv2d_backward_weights_prologue(const FeConvPlan&, cudnnHandle_t, const void*, const void*,
                                      const FePrologue&, void*, void*, size_t) {
  fail("conv2d_backward_weights_prologue: {}", kWhy);
}

void batchnorm_forward_train(const FeBnPlan&, cudnnHandle_t, cudaStream_t, const FeBnForward&,
                             const FeBnStats&, void*, size_t) {
  fail("batchnorm_forward_train: {}", kWhy);
}

void batchnorm_backward(const FeBnPlan&, cudnnHandle_t, const FeBnBackward&, void*, size_t) {
  fail("batchnorm_backward: {}", kWhy);
}

}  // namespace stoker::gpu
