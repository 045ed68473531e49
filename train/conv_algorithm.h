// SPDX-License-Identifier: Apache-2.0
// The convolution algorithm policy, one vocabulary for every backend, parsed once (the
// command line's --conv-algo, a checkpoint's stored word; BackendConfig holds the parsed form):
//   heuristic       the library's own choice (default)
//   exhaustive      every candidate measured once per shape, the fastest kept (cached; cuda)
//   fixed:<name>    one algorithm wherever it applies, the heuristic elsewhere; names are the
//                   backend's (cpu: direct, since oneDNN 3 has no x86 Winograd; cuda: cuDNN's,
//                   train/gpu/algo_cache.h), and each backend refuses a name it lacks
// Older versions' words, stored in their checkpoints, still read: auto (heuristic), direct and
// winograd (fixed:direct, fixed:winograd).
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace stoker {

struct ConvAlgorithm {
  enum class Kind { heuristic, exhaustive, fixed } kind = Kind::heuristic;
  std::string fixed;  // kind fixed: the backend's name of the algorithm
  bool operator==(const ConvAlgorithm&) const = default;
};

// stoker::Error "unknown convolution algorithm 'x': expected heuristic, exhaustive or
// fixed:<name>".
ConvAlgorithm parse_conv_algorithm(std::string_view word);
// The canonical word ("heuristic", "fixed:direct"): what a checkpoint and a report store.
std::string conv_algorithm_name(const ConvAlgorithm& a);

}  // namespace stoker

// Formats as its canonical word.
template <>
struct fmt::formatter<stoker::ConvAlgorithm> : fmt::formatter<std::string_view> {
  auto format(const stoker::ConvAlgorithm& a, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(stoker::conv_algorithm_name(a), ctx);
  }
};
