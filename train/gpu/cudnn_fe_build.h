// SPDX-License-Identifier: Apache-2.0
// The cuDNN frontend graphs behind cudnn_fe_graphs.h, built and planned: one builder per
// graph (the tensors bound by uid), which graphs each instance runs, and the planning of a
// graph on a handle's device or, with no device, for a GPU its properties describe. Included
// by cudnn_fe_build.cc and cudnn_fe_graphs.cc only (it needs the frontend's headers).
#pragma once

#include <cudnn_frontend.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "train/gpu/cudnn_fe_graphs.h"

namespace stoker::gpu {

// A GPU that graphs are planned for without being there (fe_device_from_json).
struct FeDevice {
  std::shared_ptr<cudnn_frontend::DeviceProperties> properties;
  int sm_version = 0;
};

namespace fe_build {

// A built graph, or why cuDNN refused it; `key` names it in messages.
struct Built {
  std::string key;
  cudnn_frontend::graph::Graph graph;
  int64_t workspace = 0;
  bool supported = false;
  std::string why;
};

// Tensor uids, the keys of the variant pack.
enum Uid : int64_t {
  kX = 1,
  kW,
  kY,
  kZ,
  kSum,
  kSqSum,
  kGamma,
  kBeta,
  kEqScale,
  kEqBias,
  kPrevMean,
  kPrevVar,
  kNextMean,
  kNextVar,
  kMean,
  kInvVar,
  kDy,
  kDx,
  kDz,
  kDgamma,
  kDbeta,
  kMask,
  kPScale,  // a prologue's scale and bias (the batch norm's eq_scale, eq_bias it applies)
  kPBias,
  kDw,
};

// The graphs of a conv instance: its forward with statistics, under a prologue its data
// gradient with the ReLU's and its weights' gradient too (without, its backward is cuDNN's
// legacy calls, conv_cudnn.h). A batch norm's: finalize, apply (not under a prologue: the
// reading conv applies it) and backward.
enum class ConvGraph { forward, backward_data, backward_weights };
inline constexpr const char* kConvGraphName[] = {"conv_genstats", "conv_dgrad_relu", "conv_wgrad"};
enum class BnGraph { finalize, apply, backward };
inline constexpr const char* kBnGraphName[] = {"finalize", "apply", "backward"};
std::vector<ConvGraph> conv_graphs(const FeConvShape& s);
std::vector<BnGraph> bn_graphs(const FeBnShape& s);

// The graph, built: no device call.
std::shared_ptr<Built> build_conv(ConvGraph which, const FeConvShape& s);
std::shared_ptr<Built> build_bn(BnGraph which, const FeBnShape& s);

// Validates and plans the graph (heuristics, then the fallback list), sizing its workspace: on
// the handle's device, or with no device for `device` (the frontend's deviceless path: the
// same heuristics and support checks, for the GPU its properties describe; it stops there,
// since building a runtime-compiled engine's plan loads its kernels through the driver).
std::shared_ptr<Built> finish(std::shared_ptr<Built> b, cudnnHandle_t handle,
                              const FeDevice* device = nullptr);

}  // namespace fe_build
}  // namespace stoker::gpu
