// SPDX-License-Identifier: Apache-2.0
// Backend's fronts (train/backend.h): the constructor checks the plan, stage() the batch and
// reshape() the new shape, once, for every backend, before the implementation sees them. A
// fake implementation counts what reaches it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "train/backend.h"

namespace stoker {
namespace {

// A network of no layers taking 3 channels, 4 classes.
Network tiny_net() {
  return Network{.name = "tiny", .num_classes = 4, .tensors = {"input"}};
}

class CountingImpl final : public Backend, public BackendDiagnostics {
 public:
  explicit CountingImpl(const BackendConfig& c)
      : Backend({.activity_records = true}, tiny_net(), c, "counting") {}
  std::string describe() const override { return "counting"; }
  HostMemory host_memory() const override { return {}; }
  void load(const Checkpoint&, std::string_view) override {}
  Checkpoint save() const override { return {}; }
  Checkpoint gradients() const override { return {}; }
  void release_input() override {}
  void forward_backward() override {}
  void update(const SgdConfig&, float) override {}
  std::vector<StepResult> collect() override { return {}; }
  void forward_eval() override {}
  std::span<const float> logits() override { return {}; }
  BackendDiagnostics& diagnostics() override { return *this; }
  std::vector<ActivityRecord> take_activity() override { return {}; }
  std::vector<ConvChoice> algorithms() const override { return {}; }

  int stages = 0;
  std::vector<std::pair<int64_t, int64_t>> reshapes;

 private:
  void stage_impl(const HostBatch&) override { ++stages; }
  void reshape_impl(int64_t h, int64_t w) override { reshapes.emplace_back(h, w); }
};

const BackendConfig kPlan{.batch = 2, .height = 8, .width = 8};

TEST(BackendFront, TheConstructorChecksThePlan) {
  BackendConfig c = kPlan;
  c.batch = 0;
  try {
    CountingImpl b(c);
    FAIL() << "batch 0 was planned";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("counting: batch 0", 0), 0u) << e.what();
  }
  EXPECT_NO_THROW(CountingImpl{kPlan});
}

TEST(BackendFront, StageChecksTheBatchBeforeTheImplementation) {
  CountingImpl b(kPlan);
  const std::vector<int32_t> good = {0, 3}, bad = {0, 4};
  b.stage({nullptr, good.data(), 2});
  EXPECT_EQ(b.stages, 1);
  try {
    b.stage({nullptr, bad.data(), 2});
    FAIL() << "label 4 of 4 classes was staged";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("label 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(b.stage({nullptr, good.data(), 1}), Error);  // not the planned batch
  EXPECT_EQ(b.stages, 1) << "a refused batch reached the implementation";
}

TEST(BackendFront, ReshapeChecksTheShapeAndSkipsTheCurrentOne) {
  CountingImpl b(kPlan);
  b.reshape(8, 8);  // the current shape: nothing to do
  EXPECT_TRUE(b.reshapes.empty());
  b.reshape(16, 12);
  ASSERT_EQ(b.reshapes.size(), 1u);
  EXPECT_EQ(b.reshapes[0], std::make_pair(int64_t(16), int64_t(12)));
  b.reshape(16, 12);  // now the current one
  EXPECT_EQ(b.reshapes.size(), 1u);
  EXPECT_THROW(b.reshape(0, 12), Error);
  EXPECT_EQ(b.reshapes.size(), 1u) << "a refused shape reached the implementation";
  b.reshape(8, 8);  // the refused shape left the plan at 16 x 12
  EXPECT_EQ(b.reshapes.size(), 2u);
}

TEST(BackendFront, CapsAreWhatTheImplementationDeclared) {
  const CountingImpl b(kPlan);
  EXPECT_TRUE(b.caps().activity_records);
  EXPECT_FALSE(b.caps().device);
  EXPECT_FALSE(b.caps().offers(Precision::f32));
}

}  // namespace
}  // namespace stoker
