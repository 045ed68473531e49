// SPDX-License-Identifier: Apache-2.0
// The conv_stats graphs (train/gpu/cudnn_fe_graphs.h) for every instance the lowering asks for
// in ResNet-18 and ResNet-50, at f16 and bf16, planned by cuDNN for an H200 it is not running
// on (the deviceless path: the frontend's validation, the operation graph, heuristics and
// support checks, for the GPU tests/train/fixtures/h200_cudnn_device.json describes).
// Execution and numerics on a GPU are the conformance suite's cuda rows (docs/GPU.md item 6b).
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include "common/error.h"
#include "models/resnet.h"
#include "models/shapes.h"
#include "tests/skip_policy.h"
#include "train/gpu/cudnn_fe_graphs.h"
#include "train/lowering.h"

namespace stoker::gpu {
namespace {

#define SKIP_WITHOUT_FRONTEND() \
  if (!fe_graphs_built()) STOKER_SKIP_IF_OPTIONAL("this build has no cuDNN frontend")

// The graphs' shapes of every conv_stats pair the lowering takes in a ResNet (each pair
// accepted), derived as the backend derives them (fe_conv_shape, fe_bn_shape).
struct Instances {
  std::vector<FeConvShape> convs;
  std::vector<FeBnShape> bns;
};
Instances instances(int depth, int64_t batch, int64_t size, DType dtype, uint32_t fusions) {
  ResNetConfig rc;
  rc.depth = depth;
  const Network net = build_resnet(rc);
  const std::vector<ActShape> shapes = infer_shapes(net, size, size);
  const Lowering low = lower(net, fusions, [](const Op&) { return true; });
  Instances out;
  for (const Op& op : low.ops) {
    const Layer& l = first_layer(net, op);
    const ActShape& x = shapes[size_t(l.inputs[0])];
    if (op.stats_epilogue) out.convs.push_back(fe_conv_shape(l, x, batch, dtype, op.prologue));
    if (op.stats_given) out.bns.push_back(fe_bn_shape(op, l, x, batch, dtype));
  }
  return out;
}

std::shared_ptr<FeDevice> h200() {
  std::ifstream f(std::string(STOKER_FIXTURES) + "/h200_cudnn_device.json");
  std::stringstream json;
  json << f.rdbuf();
  return fe_device_from_json(json.str(), 90);
}

std::string describe(const FeConvShape& c) {
  return "conv " + std::to_string(c.c) + "->" + std::to_string(c.k) + " " + std::to_string(c.r) +
         "x" + std::to_string(c.s) + " /" + std::to_string(c.stride) + " at " +
         std::to_string(c.h) + "x" + std::to_string(c.w) + " n" + std::to_string(c.n) +
         (c.prologue ? " +prologue" : "");
}
std::string describe(const FeBnShape& b) {
  return "batch norm c" + std::to_string(b.c) + " at " + std::to_string(b.h) + "x" +
         std::to_string(b.w) + " n" + std::to_string(b.n) + (b.add ? " +add" : "") +
         (b.relu ? " +relu" : "") + (b.prologue ? " +prologue" : "");
}

// Planned for an H200 with no device, every instance of the configurations a GPU run trains
// (gpu_check's ResNet-50 at batch 256 and, its b400 step, 400, 224 px; the conformance rows'
// ResNet-18 at batch 4, 64 px): what cuDNN 9.19 runs on sm_90, found before a GPU does. At f16
// every graph but the stem conv's (3 input channels: an NHWC row of 6 bytes, not the 32-bit
// alignment its engines need); at bf16 the batch norms' graphs but no conv (the frontend asks
// genstats for the input's precision, bf16, and the engines compute statistics in f32 only), so
// conv_stats is an f16 pattern. The same with conv_prologue (at f16; at bf16 not even the finalize
// for a prologue is planned): the convs that apply a batch norm (its forward with the prologue, the
// data gradient with the ReLU's, the weights' gradient at the prologue's output) and the batch
// norms they apply (finalize, backward). The refusals per distinct shape are printed. cuDNN's
// runtime-compiled engines (the apply, the backward) look for the driver library before their
// support checks: ctest gives this test the toolkit's stub in its place (no kernel is loaded: the
// deviceless planning stops before building plans).
class FeGraphsPlanH200 : public testing::TestWithParam<std::tuple<int, DType, uint32_t>> {};

TEST_P(FeGraphsPlanH200, WhatCudnnRunsOnSm90) {
  SKIP_WITHOUT_FRONTEND();
  if (dlopen("libcuda.so.1", RTLD_LAZY) == nullptr)
    STOKER_SKIP_IF_OPTIONAL("no CUDA driver library, not even the toolkit's stub (libcuda.so.1)");
  const auto [run, dtype, fusions] = GetParam();
  const int depth = run == 18 ? 18 : 50;
  const std::shared_ptr<FeDevice> device = h200();
  const Instances in = run == 18 ? instances(18, 4, 64, dtype, fusions)
                                 : instances(50, run == 400 ? 400 : 256, 224, dtype, fusions);
  // Every conv feeds a batch norm of its own: the lowering pairs them all.
  EXPECT_EQ(in.convs.size(), depth == 50 ? 53u : 20u);
  EXPECT_EQ(in.bns.size(), in.convs.size());
  std::set<std::string> convs, refused_convs, bns, refused_bns;
  for (const FeConvShape& c : in.convs)
    if (convs.insert(describe(c)).second)
      if (std::string why = fe_plan_conv_stats_for(*device, c); !why.empty()) {
        refused_convs.insert(describe(c));
        std::printf("# refused: %s: %s\n", describe(c).c_str(), why.substr(0, 300).c_str());
      }
  for (const FeBnShape& b : in.bns)
    if (bns.insert(describe(b)).second)
      if (std::string why = fe_plan_batchnorm_for(*device, b); !why.empty()) {
        refused_bns.insert(describe(b));
        std::printf("# refused: %s: %s\n", describe(b).c_str(), why.substr(0, 300).c_str());
      }
  std::printf(
      "# sm_90 deviceless, %s: %zu of %zu conv shapes and %zu of %zu batch-norm shapes planned\n",
      std::string(dtype_name(dtype)).c_str(), convs.size() - refused_convs.size(), convs.size(),
      bns.size() - refused_bns.size(), bns.size());
  // bf16 under a prologue: no finalize writes bf16 scale and bias either (moot: no bf16 conv
  // takes a prologue, since none gets its statistics).
  std::erase_if(refused_bns, [&](const std::string& b) {
    return dtype == DType::bf16 && b.ends_with("+prologue");
  });
  EXPECT_EQ(refused_bns, std::set<std::string>{});
  // The three forms of a batch norm's op were asked: alone (a downsample's), + ReLU, + add + ReLU.
  EXPECT_TRUE(std::ranges::any_of(bns, [](const std::string& b) { return !b.ends_with("relu"); }));
  EXPECT_TRUE(
      std::ranges::any_of(bns, [](const std::string& b) { return b.ends_with("+add +relu"); }));
  EXPECT_TRUE(std::ranges::any_of(
      bns, [](const std::string& b) { return b.ends_with("relu") && !b.ends_with("add +relu"); }));
  if ((fusions & kFuseConvPrologue) != 0) {  // both sides of the prologue were asked
    EXPECT_TRUE(std::ranges::any_of(convs, [](const auto& c) { return c.ends_with("+prologue"); }));
    EXPECT_TRUE(std::ranges::any_of(bns, [](const auto& b) { return b.ends_with("+prologue"); }));
  }
  const FeConvShape stem = in.convs.front();
  ASSERT_EQ(stem.c, 3);
  EXPECT_EQ(refused_convs, dtype == DType::f16 ? std::set<std::string>{describe(stem)} : convs);
}

INSTANTIATE_TEST_SUITE_P(
    ResNets, FeGraphsPlanH200,
    // 18: ResNet-18 at batch 4; 50: ResNet-50 at batch 256; 400: ResNet-50 at batch 400.
    testing::Combine(testing::Values(18, 50, 400), testing::Values(DType::f16, DType::bf16),
                     testing::Values(kDefaultFusions | kFuseConvStats, kAllFusions)),
    [](const auto& info) {
      const int run = std::get<0>(info.param);
      return (run == 400 ? std::string("resnet50_b400") : "resnet" + std::to_string(run)) + "_" +
             std::string(dtype_name(std::get<1>(info.param))) +
             ((std::get<2>(info.param) & kFuseConvPrologue) != 0 ? "_prologue" : "");
    });

// Properties cuDNN cannot read are an error naming cuDNN's reason.
TEST(FeGraphsPlanH200, UnreadablePropertiesAreAnError) {
  SKIP_WITHOUT_FRONTEND();
  try {
    fe_device_from_json("{}", 90);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("maxGridSize"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace stoker::gpu
