// SPDX-License-Identifier: Apache-2.0
// ResNet-18/34/50/101/152 exactly as torchvision 0.14 builds them (v1.5: a bottleneck's
// stride is on its 3x3 conv; basic blocks for 18/34), with any number of classes: layers,
// parameter names (the state_dict keys, in order), shapes and initialisation. Building the
// description allocates no tensor and knows no backend or input size.
#pragma once

#include <string_view>

#include "models/network.h"

namespace stoker {

struct ResNetConfig {
  int depth = 50;  // 18, 34, 50, 101 or 152
  int num_classes = 1000;
  // torchvision's zero_init_residual: the last BN of each residual branch starts with
  // weight 0 (bn2 of a basic block, bn3 of a bottleneck), so each block starts as identity.
  bool zero_init_residual = false;
};

// "resnet50" -> depth 50 (other fields default); an unknown name is a stoker::Error that
// lists the valid ones.
ResNetConfig parse_resnet_arch(std::string_view arch);

// Throws stoker::Error for a depth other than 18/34/50/101/152 or fewer than 1 class.
Network build_resnet(const ResNetConfig& config);

}  // namespace stoker
