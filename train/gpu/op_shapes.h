// SPDX-License-Identifier: Apache-2.0
// What each of the GPU backend's library ops is planned for, and the key of its plan in a
// PlanCache (plan_cache.h): the key names every field of the shape, so two layers share a plan
// exactly when everything the plan depends on is equal (ResNet-50 has 53 convolutions of 23
// shapes). Host only: the plans themselves are conv_cudnn.h's, cudnn_batchnorm.h's and
// cudnn_pool.h's.
#pragma once

#include <cstdint>
#include <string>

#include "common/dtype.h"
#include "models/network.h"
#include "models/shapes.h"
#include "train/backend.h"
#include "train/gpu/algo_cache.h"

namespace stoker::gpu {

// One convolution layer's geometry (no bias, dilation 1, as ResNet's).
struct ConvGeometry {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t k = 0, r = 0, s = 0;         // output channels, kernel
  int64_t oh = 0, ow = 0;              // output
  int stride = 1, pad = 0, groups = 1;
};

// A convolution's plan: its geometry in a dtype and layout, the math its precision allows,
// whether it has a data gradient (not for the images), and how its algorithms are chosen.
struct ConvShape {
  ConvGeometry g;
  DType dtype = DType::f32;
  bool nhwc = false;
  Precision precision = Precision::f32;
  bool need_bwd_data = true;
  ConvPolicy policy;
  size_t workspace_limit = 0;
};

// A batch norm's input n x c x h x w (its output's shape too), in a dtype and layout, in cuDNN's
// spatial or spatial-persistent mode; `ex`: the plan also asks which Ex forms cuDNN offers
// (plain, with the ReLU, with the add and the ReLU), with their workspace and reserve space.
struct BnShape {
  int64_t n = 0, c = 0, h = 0, w = 0;
  DType dtype = DType::f32;
  bool nhwc = false;
  bool persistent = false;
  bool ex = false;
};

// A pooling layer: max (a k x k window) or global average (the whole image), input n x c x h x
// w, output n x c x oh x ow.
struct PoolShape {
  bool max = true;
  int64_t n = 0, c = 0, h = 0, w = 0, oh = 0, ow = 0;
  int64_t k = 1, stride = 1, pad = 0;
  DType dtype = DType::f32;
  bool nhwc = false;
};

// What a layer is planned for, from its input's and output's shapes under `config` (batch,
// precision: the compute dtype and layout, gpu_policy.h; the algorithm policy and workspace
// limit): one derivation for the backend and its tests. A batch norm's mode and whether to ask
// for the Ex forms are the net's fusion state.
ConvShape conv_shape(const Layer& conv, const ActShape& in, const ActShape& out,
                     const BackendConfig& config);
BnShape bn_shape(const ActShape& in, const BackendConfig& config, bool persistent, bool ex);
PoolShape pool_shape(const Layer& pool, const ActShape& in, const ActShape& out,
                     const BackendConfig& config);

// The conv's key names its precision as algo_cache.h's ConvKey does, by its dtype and whether
// tf32 is allowed (the dtype is the precision's compute dtype).
std::string conv_plan_key(const ConvShape& s);
std::string bn_plan_key(const BnShape& s);
std::string pool_plan_key(const PoolShape& s);

}  // namespace stoker::gpu
