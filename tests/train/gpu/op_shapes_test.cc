// SPDX-License-Identifier: Apache-2.0
// train/gpu/op_shapes.h: two shapes share a plan (the same PlanCache key) exactly when they are
// equal. Every field of each shape is changed in turn, and each change must change the key: a
// key that left one out would hand one shape's descriptors and algorithms to another.
#include "train/gpu/op_shapes.h"

#include <gtest/gtest.h>

#include "models/resnet.h"

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace stoker::gpu {
namespace {

// The key of `base`, then of each variant: all distinct, and `base` again gives its key.
template <class Shape>
void expect_distinct(const Shape& base, std::string (*key)(const Shape&),
                     const std::vector<std::function<void(Shape&)>>& changes) {
  std::set<std::string> keys = {key(base)};
  EXPECT_EQ(key(base), key(Shape(base)));
  for (size_t i = 0; i < changes.size(); ++i) {
    Shape s = base;
    changes[i](s);
    EXPECT_TRUE(keys.insert(key(s)).second) << "change " << i << " kept the key " << key(s);
  }
}

TEST(OpShapes, ConvKeyNamesEveryField) {
  ConvShape base;
  base.g = {256, 64, 56, 56, 64, 3, 3, 56, 56, 1, 1, 1};
  base.dtype = DType::f16;
  base.nhwc = true;
  base.precision = Precision::f16;
  base.workspace_limit = size_t(1) << 30;
  expect_distinct<ConvShape>(base, conv_plan_key,
                             {[](ConvShape& s) { s.g.n = 128; },
                              [](ConvShape& s) { s.g.c = 128; },
                              [](ConvShape& s) { s.g.h = 28; },
                              [](ConvShape& s) { s.g.w = 28; },
                              [](ConvShape& s) { s.g.k = 128; },
                              [](ConvShape& s) { s.g.r = 1; },
                              [](ConvShape& s) { s.g.s = 1; },
                              [](ConvShape& s) { s.g.oh = 28; },
                              [](ConvShape& s) { s.g.ow = 28; },
                              [](ConvShape& s) { s.g.stride = 2; },
                              [](ConvShape& s) { s.g.pad = 0; },
                              [](ConvShape& s) { s.g.groups = 2; },
                              [](ConvShape& s) { s.dtype = DType::bf16; },
                              [](ConvShape& s) { s.nhwc = false; },
                              [](ConvShape& s) {  // f32 and tf32 differ by the math alone
                                s.dtype = DType::f32;
                                s.precision = Precision::f32;
                              },
                              [](ConvShape& s) {
                                s.dtype = DType::f32;
                                s.precision = Precision::tf32;
                              },
                              [](ConvShape& s) { s.need_bwd_data = false; },
                              [](ConvShape& s) { s.policy.kind = ConvPolicy::Kind::exhaustive; },
                              [](ConvShape& s) {
                                s.policy.kind = ConvPolicy::Kind::fixed;
                                s.policy.fixed = "implicit_gemm";
                              },
                              [](ConvShape& s) { s.workspace_limit = size_t(1) << 20; }});
}

TEST(OpShapes, BatchNormKeyNamesEveryField) {
  const BnShape base{.n = 256, .c = 64, .h = 56, .w = 56, .dtype = DType::f16, .nhwc = true};
  expect_distinct<BnShape>(
      base, bn_plan_key,
      {[](BnShape& s) { s.n = 400; }, [](BnShape& s) { s.c = 128; }, [](BnShape& s) { s.h = 28; },
       [](BnShape& s) { s.w = 28; }, [](BnShape& s) { s.dtype = DType::f32; },
       [](BnShape& s) { s.nhwc = false; }, [](BnShape& s) { s.persistent = true; },
       [](BnShape& s) { s.ex = true; }});
}

TEST(OpShapes, PoolKeyNamesEveryField) {
  const PoolShape base{.max = true,
                       .n = 256,
                       .c = 64,
                       .h = 112,
                       .w = 112,
                       .oh = 56,
                       .ow = 56,
                       .k = 3,
                       .stride = 2,
                       .pad = 1,
                       .dtype = DType::f16,
                       .nhwc = true};
  expect_distinct<PoolShape>(
      base, pool_plan_key,
      {[](PoolShape& s) { s.max = false; }, [](PoolShape& s) { s.n = 400; },
       [](PoolShape& s) { s.c = 128; }, [](PoolShape& s) { s.h = 96; },
       [](PoolShape& s) { s.w = 96; }, [](PoolShape& s) { s.oh = 48; },
       [](PoolShape& s) { s.ow = 48; }, [](PoolShape& s) { s.k = 2; },
       [](PoolShape& s) { s.stride = 1; }, [](PoolShape& s) { s.pad = 0; },
       [](PoolShape& s) { s.dtype = DType::bf16; }, [](PoolShape& s) { s.nhwc = false; }});
}

// The plans ResNet-50 shares (224 px, batch 256, f16 NHWC): 53 convs of 23 shapes (the stem;
// per stage after the first, the first block's four and the later blocks' two new ones; a first
// block's 1x1 conv3 and its downsample agree in the first stage), 53 batch norms of 12 input
// shapes (the stem's, then two in the first stage and three in each later one), the two pools.
TEST(OpShapes, ResNet50SharesPlansByShape) {
  const Network net = build_resnet(ResNetConfig{});
  BackendConfig config;
  config.batch = 256;
  config.height = config.width = 224;
  config.precision = Precision::f16;
  config.workspace_limit = size_t(1) << 30;
  const std::vector<ActShape> shapes = infer_shapes(net, 224, 224);
  std::set<std::string> conv, bn, pool;
  int convs = 0, bns = 0;
  for (const Layer& l : net.layers) {
    const ActShape& in = shapes[size_t(l.inputs[0])];
    const ActShape& out = shapes[size_t(l.output)];
    if (l.kind == LayerKind::conv) {
      ++convs;
      const ConvShape s = conv_shape(l, in, out, config);
      EXPECT_EQ(s.dtype, DType::f16);
      EXPECT_TRUE(s.nhwc);
      EXPECT_EQ(s.need_bwd_data, l.inputs[0] != 0) << l.name;
      conv.insert(conv_plan_key(s));
    } else if (l.kind == LayerKind::batchnorm) {
      ++bns;
      bn.insert(bn_plan_key(bn_shape(in, config, true, true)));
    } else if (l.kind == LayerKind::maxpool || l.kind == LayerKind::global_avgpool) {
      pool.insert(pool_plan_key(pool_shape(l, in, out, config)));
    }
  }
  EXPECT_EQ(convs, 53);
  EXPECT_EQ(conv.size(), 23u);
  EXPECT_EQ(bns, 53);
  EXPECT_EQ(bn.size(), 12u);
  EXPECT_EQ(pool.size(), 2u);
}

}  // namespace
}  // namespace stoker::gpu
