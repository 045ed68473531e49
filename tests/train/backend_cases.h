// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the backend tests (the conformance suite and the oneDNN-specific one):
// small ResNets, a tame initialisation, error measures, layout conversion, one staged step.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "common/error.h"
#include "models/normal.h"
#include "models/resnet.h"
#include "train/backend.h"
#include "train/checkpoint.h"

namespace stoker::test {

// max |diff| / max |reference| over a tensor.
inline double error(std::span<const float> ref, std::span<const float> got) {
  EXPECT_EQ(ref.size(), got.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < std::min(ref.size(), got.size()); ++i) {
    diff = std::max(diff, std::abs(double(ref[i]) - double(got[i])));
    scale = std::max(scale, std::abs(double(ref[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// ||diff||_2 / ||reference||_2 over a tensor (ggml's normalised error): where a few elements
// flip (a ReLU or a max-pool choice on a near tie, as low precision does) max |diff| is as
// large as the tensor, this stays at the share of the tensor that moved.
inline double norm_error(std::span<const float> ref, std::span<const float> got) {
  EXPECT_EQ(ref.size(), got.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < std::min(ref.size(), got.size()); ++i) {
    const double d = double(ref[i]) - double(got[i]);
    diff += d * d;
    scale += double(ref[i]) * double(ref[i]);
  }
  return scale > 0 ? std::sqrt(diff / scale) : std::sqrt(diff);
}

inline const Tensor& tensor(const Checkpoint& c, std::string_view name) {
  const Tensor* t = find_tensor(c, name);
  STOKER_CHECK_MSG(t != nullptr, "no tensor {}", name);
  return *t;
}

inline std::vector<float> values(const Tensor& t) {
  std::vector<float> v(size_t(shape_numel(t.shape)));
  copy_values(t, v);
  return v;
}

inline Network resnet(int depth, int classes) {
  ResNetConfig c;
  c.depth = depth;
  c.num_classes = classes;
  return build_resnet(c);
}

// Small last-BN weights in every residual branch: unit-BN ResNet-50 at small inputs is
// chaotic (gradients of 1e3 and more), which would test conditioning rather than layers.
inline Checkpoint tame_init(const Network& net, uint64_t seed) {
  Checkpoint c = init_checkpoint(net, seed);
  for (Tensor& t : c.tensors) {
    const bool last_bn =
        t.name.ends_with("bn3.weight") ||
        (net.name == "resnet18" && t.name.ends_with("bn2.weight") && t.name.starts_with("layer"));
    if (!last_bn) continue;
    std::vector<float> v = values(t);
    for (float& x : v) x = 0.2f;
    t = make_f32_tensor(t.name, t.shape, v);
  }
  return c;
}

template <class T>
std::vector<T> nchw_to_nhwc(const std::vector<T>& x, int64_t n, int64_t c, int64_t h, int64_t w) {
  std::vector<T> y(x.size());
  for (int64_t a = 0; a < n; ++a)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t i = 0; i < h * w; ++i)
        y[size_t((a * h * w + i) * c + k)] = x[size_t((a * c + k) * h * w + i)];
  return y;
}

// stage + forward_backward, then collect that one step's loss.
inline float step(Backend& b, const void* images, const int32_t* labels, int64_t batch) {
  b.stage({images, labels, batch});
  b.forward_backward();
  const std::vector<StepResult> r = b.collect();
  EXPECT_EQ(r.size(), 1u);
  b.release_input();
  return r.empty() ? NAN : r.back().loss;
}

}  // namespace stoker::test
