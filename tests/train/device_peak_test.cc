// SPDX-License-Identifier: Apache-2.0
// The peak table and the rate check on the H200 run's own figures (2026-11-26, ResNet-50 at
// 224 px: 24.5 GFLOP per trained image by models/flops.h): the graph runs' host-timed rates
// (446,082 img/s bf16 NHWC, 127,987 tf32 NCHW) are refused, the real ones (2,394 f16 NCHW,
// 663 bf16 NHWC fed by the loader) and PyTorch's best (6,634, torch.compile) pass.
#include "train/device_peak.h"

#include <gtest/gtest.h>

#include "models/flops.h"
#include "models/resnet.h"
#include "models/shapes.h"

namespace stoker {
namespace {

double resnet50_flop_per_image() {
  const Network net = build_resnet(ResNetConfig{});
  return trained_image_flops(forward_cost(net, infer_shapes(net, 224, 224)));
}

TEST(DevicePeak, KnownGpusByCudasNames) {
  EXPECT_DOUBLE_EQ(device_peak("NVIDIA H200", Precision::bf16).flops, 989.4e12);
  EXPECT_DOUBLE_EQ(device_peak("NVIDIA H100 80GB HBM3", Precision::f16).flops, 989.4e12);
  EXPECT_DOUBLE_EQ(device_peak("NVIDIA H100 80GB HBM3", Precision::tf32).flops, 494.7e12);
  EXPECT_DOUBLE_EQ(device_peak("NVIDIA H100 80GB HBM3", Precision::f32).flops, 66.9e12);
  EXPECT_DOUBLE_EQ(device_peak("NVIDIA H100 PCIe", Precision::bf16).flops, 756.5e12);
  EXPECT_DOUBLE_EQ(device_peak("NVIDIA A100-SXM4-80GB", Precision::bf16).flops, 312e12);
  EXPECT_DOUBLE_EQ(device_peak("NVIDIA A100-SXM4-80GB", Precision::tf32).flops, 156e12);
  EXPECT_DOUBLE_EQ(device_peak("NVIDIA A10", Precision::f16).flops, 125e12);  // not the A100's
  EXPECT_DOUBLE_EQ(device_peak("NVIDIA GH200 480GB", Precision::bf16).flops, 989.4e12);
  EXPECT_DOUBLE_EQ(device_peak("NVIDIA L40", Precision::bf16).flops, 181e12);  // not the L4's
  EXPECT_NE(device_peak("NVIDIA H200", Precision::bf16).basis.find("H200"), std::string::npos);
}

TEST(DevicePeak, AnUnknownGpuGetsTheLargestPeakInTheTable) {
  const DevicePeak p = device_peak("Some Future GPU", Precision::bf16);
  EXPECT_DOUBLE_EQ(p.flops, 2500e12);
  EXPECT_NE(p.basis.find("not in the table"), std::string::npos);
  EXPECT_DOUBLE_EQ(device_peak("", Precision::f32).flops, 91.6e12);
}

TEST(RateCheck, TheH200RunsHostTimedRatesAreRefusedItsRealOnesPass) {
  const double flop = resnet50_flop_per_image();
  EXPECT_NEAR(flop / 1e9, 24.5, 0.2);
  const DevicePeak bf16 = device_peak("NVIDIA H200", Precision::bf16);
  const RateCheck graph = check_rate(446082, flop, bf16);
  EXPECT_FALSE(graph.plausible);
  EXPECT_NEAR(graph.implied_flops / 1e12, 10944, 50);  // the run printed 10,944,658.6 GFLOP/s
  EXPECT_NE(graph.message.find("446082.0 img/s"), std::string::npos) << graph.message;
  EXPECT_NE(graph.message.find("989.4 TFLOP/s"), std::string::npos) << graph.message;
  EXPECT_FALSE(check_rate(127987, flop, device_peak("NVIDIA H200", Precision::tf32)).plausible);
  EXPECT_TRUE(check_rate(2394, flop, device_peak("NVIDIA H200", Precision::f16)).plausible);
  EXPECT_TRUE(check_rate(663, flop, bf16).plausible);
  EXPECT_TRUE(check_rate(6634, flop, bf16).plausible);  // torch.compile: 164 TFLOP/s
  EXPECT_TRUE(check_rate(6634, flop, bf16).message.empty());
  // Just above and below the peak: the boundary is the peak itself.
  EXPECT_FALSE(check_rate(1.001 * bf16.flops / flop, flop, bf16).plausible);
  EXPECT_TRUE(check_rate(0.999 * bf16.flops / flop, flop, bf16).plausible);
}

}  // namespace
}  // namespace stoker
