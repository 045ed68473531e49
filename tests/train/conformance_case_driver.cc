// SPDX-License-Identifier: Apache-2.0
// Driver for conformance_bounds.py: writes what one row of backend_conformance_test starts
// from (the model's tame initial state, the images as the reference network sees them, the
// labels), so that torch can run the same step in several number formats. Not a test.
// Usage: conformance_case_driver DEPTH BATCH SIZE f32|u8 OUT
//   OUT (safetensors): the state_dict in torch's names, "case.images" F32 N x 3 x SIZE x SIZE,
//   "case.labels" I64 N.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "tests/train/backend_cases.h"
#include "tests/train/step_input.h"
#include "train/checkpoint.h"

namespace {

int run(int argc, char** argv) {
  if (argc != 6) {
    fmt::print(stderr, "usage: {} DEPTH BATCH SIZE f32|u8 OUT\n", argv[0]);
    return 2;
  }
  const int depth = std::stoi(argv[1]);
  const int64_t batch = std::stoll(argv[2]), size = std::stoll(argv[3]);
  const std::string type = argv[4];
  if (type != "f32" && type != "u8") stoker::fail("input type '{}': expected f32 or u8", type);
  // The same calls, in the same order, as WholeStep.EveryLayerMatchesTheReferenceNetwork.
  const stoker::Network net = stoker::test::resnet(depth, 10);
  stoker::Checkpoint out = stoker::test::tame_init(net, 11);
  stoker::test::StepInput in;
  stoker::test::make_input(batch, size, type == "u8" ? stoker::DType::u8 : stoker::DType::f32,
                           false, in);
  out.tensors.push_back(
      stoker::make_f32_tensor("case.images", {batch, 3, size, size}, in.reference));
  const std::vector<int64_t> labels(in.labels.begin(), in.labels.end());
  out.tensors.push_back(stoker::make_i64_tensor("case.labels", {batch}, labels));
  stoker::save_checkpoint(argv[5], out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const stoker::Error& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
}
