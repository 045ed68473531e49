// SPDX-License-Identifier: Apache-2.0
// The reference network's contract on a small ResNet-18: a step's gradients are written, not
// accumulated across steps; the training forward updates the running statistics and counts
// batches, the eval forward changes nothing; bad inputs are stoker::Errors. Its values are
// checked against torchvision by reference_network_vs_torchvision.py.
#include "train/reference/network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/error.h"
#include "models/normal.h"
#include "models/resnet.h"
#include "test_util.h"

namespace stoker::ref {
namespace {

Network resnet18(int classes) {
  ResNetConfig c;
  c.depth = 18;
  c.num_classes = classes;
  return build_resnet(c);
}

std::vector<float> copy(std::span<const float> s) {
  return {s.begin(), s.end()};
}

TEST(ReferenceNetwork, RejectsSingleValueBatchNorm) {
  const Network net = resnet18(4);
  // 32 x 32 leaves 1 x 1 maps at the last stage: one image gives one value per channel.
  try {
    make_reference_net(net, 1, 32, 32);
    FAIL() << "expected stoker::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer4.0.bn1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(make_reference_net(net, 2, 32, 32).batch, 2);
  EXPECT_ERROR("batch", make_reference_net(net, 0, 32, 32));
}

TEST(ReferenceNetwork, LoadRejectsAnotherNetworksCheckpoint) {
  ReferenceNet r = make_reference_net(resnet18(4), 2, 16, 16);
  try {
    load_parameters(r, init_checkpoint(resnet18(10), 1), "other.safetensors");
    FAIL() << "expected stoker::Error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("other.safetensors"), std::string::npos) << what;
    EXPECT_NE(what.find("fc.weight"), std::string::npos) << what;
  }
}

class ReferenceNetworkStep : public ::testing::Test {
 protected:
  void SetUp() override {
    load_parameters(r, init_checkpoint(r.net, 3), "init");
    Rng rng(5);
    fill_normal(rng, 1.0, images);
  }
  ReferenceNet r = make_reference_net(resnet18(4), 2, 16, 16);
  std::vector<float> images = std::vector<float>(2 * 3 * 16 * 16);  // N x 3 x H x W
  std::vector<int32_t> labels = {1, 3};
};

TEST_F(ReferenceNetworkStep, GradientsAreWrittenNotAccumulated) {
  const float loss = forward_backward(r, images.data(), labels.data(), 0.1f);
  const std::vector<float> conv1 = copy(gradient(r, "conv1.weight"));
  const std::vector<float> fc = copy(gradient(r, "fc.weight"));
  // Training-mode BN normalises with the batch's statistics, so the moved running stats do
  // not change the second step: same loss, same gradients, not twice them.
  EXPECT_EQ(forward_backward(r, images.data(), labels.data(), 0.1f), loss);
  EXPECT_EQ(copy(gradient(r, "conv1.weight")), conv1);
  EXPECT_EQ(copy(gradient(r, "fc.weight")), fc);
  float largest = 0;
  for (float g : conv1) largest = std::max(largest, std::abs(g));
  EXPECT_GT(largest, 0.f);  // the gradient reaches the first conv
  EXPECT_EQ(r.counts[size_t(param_index(r.net, "layer2.1.bn2.num_batches_tracked"))][0], 2);
}

TEST_F(ReferenceNetworkStep, TrainingUpdatesRunningStatsEvalDoesNot) {
  const std::vector<float> mean0 = copy(parameter(r, "layer3.0.bn1.running_mean"));
  forward_backward(r, images.data(), labels.data(), 0.f);
  const std::vector<float> mean1 = copy(parameter(r, "layer3.0.bn1.running_mean"));
  const std::vector<float> train_logits = copy(logits(r));
  EXPECT_NE(mean1, mean0);
  const std::vector<float> eval_logits = copy(forward_eval(r, images.data()));
  EXPECT_EQ(copy(parameter(r, "layer3.0.bn1.running_mean")), mean1);
  EXPECT_EQ(r.counts[size_t(param_index(r.net, "bn1.num_batches_tracked"))][0], 1);
  EXPECT_NE(eval_logits, train_logits);
}

TEST_F(ReferenceNetworkStep, BadLabelOrSmoothingIsAnError) {
  labels[1] = 4;
  EXPECT_ERROR("label", forward_backward(r, images.data(), labels.data(), 0.f));
  labels[1] = -1;
  EXPECT_ERROR("-1", forward_backward(r, images.data(), labels.data(), 0.f));
  labels[1] = 0;
  EXPECT_ERROR("1.5", forward_backward(r, images.data(), labels.data(), 1.5f));
}

}  // namespace
}  // namespace stoker::ref
