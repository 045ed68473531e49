// SPDX-License-Identifier: Apache-2.0
// Test driver for sgd_vs_torch.py: applies Stoker's SGD and LR schedule to inputs the
// script wrote, and writes the results back for it to compare with torch's.
//   sgd_driver sgd IN OUT   IN: i32 steps, i32 nesterov, i32 decay_bn, f32 momentum,
//                           f32 weight_decay, i32 tensors, per tensor (i32 n, i32 is_1d,
//                           f32 value[n]), per step (f32 lr, per tensor f32 grad[n]).
//                           OUT: per tensor f32 value[n] then f32 momentum[n].
//   sgd_driver lars ETA IN OUT   the same with LARS (trust coefficient ETA).
//   sgd_driver lr KIND BASE WARMUP START_FACTOR GAMMA TOTAL MIN STEPS [MILESTONE...]
//                           prints one lr per line for steps 0..STEPS-1.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "train/lr_schedule.h"
#include "train/sgd.h"

namespace {

template <class T>
T get(std::ifstream& in) {
  T v{};
  in.read(reinterpret_cast<char*>(&v), sizeof v);
  return v;
}

int run_sgd(const char* in_path, const char* out_path, stoker::SgdConfig c) {
  std::ifstream in(in_path, std::ios::binary);
  const int steps = get<int32_t>(in);
  c.nesterov = get<int32_t>(in) != 0;
  c.decay_bn_and_bias = get<int32_t>(in) != 0;
  c.momentum = get<float>(in);
  c.weight_decay = get<float>(in);
  const int tensors = get<int32_t>(in);
  std::vector<std::vector<float>> value(tensors), grad(tensors), mom(tensors);
  std::vector<char> has(tensors, 0), is_1d(tensors);
  for (int t = 0; t < tensors; ++t) {
    const int n = get<int32_t>(in);
    is_1d[t] = get<int32_t>(in) != 0;
    value[t].resize(n);
    grad[t].resize(n);
    mom[t].assign(n, 0.0f);
    in.read(reinterpret_cast<char*>(value[t].data()), n * sizeof(float));
  }
  for (int s = 0; s < steps; ++s) {
    const float lr = get<float>(in);
    std::vector<stoker::SgdParam> ps;
    for (int t = 0; t < tensors; ++t) {
      in.read(reinterpret_cast<char*>(grad[t].data()), grad[t].size() * sizeof(float));
      ps.push_back({value[t].data(), grad[t].data(), mom[t].data(),
                    reinterpret_cast<bool*>(&has[t]), value[t].size(), is_1d[t] != 0});
    }
    stoker::sgd_step(c, lr, ps);
  }
  if (!in) return 1;
  std::ofstream out(out_path, std::ios::binary);
  for (int t = 0; t < tensors; ++t) {
    out.write(reinterpret_cast<const char*>(value[t].data()), value[t].size() * sizeof(float));
    out.write(reinterpret_cast<const char*>(mom[t].data()), mom[t].size() * sizeof(float));
  }
  return out ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "sgd") == 0) return run_sgd(argv[2], argv[3], {});
  if (argc == 5 && std::strcmp(argv[1], "lars") == 0) {
    stoker::SgdConfig c;
    c.optimizer = stoker::Optimizer::lars;
    c.lars_eta = std::strtof(argv[2], nullptr);
    return run_sgd(argv[3], argv[4], c);
  }
  if (argc >= 10 && std::strcmp(argv[1], "lr") == 0) {
    stoker::LrSchedule s;
    s.kind = stoker::parse_lr_kind(argv[2]);
    s.base_lr = std::atof(argv[3]);
    s.warmup_steps = std::strtoul(argv[4], nullptr, 10);
    s.warmup_start_factor = std::atof(argv[5]);
    s.gamma = std::atof(argv[6]);
    s.total_steps = std::strtoul(argv[7], nullptr, 10);
    s.min_lr = std::atof(argv[8]);
    const size_t steps = std::strtoul(argv[9], nullptr, 10);
    for (int i = 10; i < argc; ++i) s.milestones.push_back(std::strtoul(argv[i], nullptr, 10));
    for (size_t i = 0; i < steps; ++i) std::printf("%.17g\n", stoker::lr_at(s, i));
    return 0;
  }
  std::fprintf(stderr, "usage: see the comment at the top of sgd_driver.cc\n");
  return 2;
}
