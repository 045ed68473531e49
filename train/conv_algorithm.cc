// SPDX-License-Identifier: Apache-2.0
#include "train/conv_algorithm.h"

#include "common/error.h"

namespace stoker {

ConvAlgorithm parse_conv_algorithm(std::string_view word) {
  using K = ConvAlgorithm::Kind;
  constexpr std::string_view kFixed = "fixed:";
  if (word == "heuristic" || word == "auto") return {};
  if (word == "exhaustive") return {K::exhaustive, {}};
  if (word == "direct" || word == "winograd") return {K::fixed, std::string(word)};
  if (word.starts_with(kFixed) && word.size() > kFixed.size())
    return {K::fixed, std::string(word.substr(kFixed.size()))};
  fail("unknown convolution algorithm '{}': expected heuristic, exhaustive or fixed:<name>", word);
}

std::string conv_algorithm_name(const ConvAlgorithm& a) {
  switch (a.kind) {
    case ConvAlgorithm::Kind::heuristic:
      return "heuristic";
    case ConvAlgorithm::Kind::exhaustive:
      return "exhaustive";
    case ConvAlgorithm::Kind::fixed:
      return "fixed:" + a.fixed;
  }
  return "?";
}

}  // namespace stoker
