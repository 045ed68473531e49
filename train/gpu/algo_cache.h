// SPDX-License-Identifier: Apache-2.0
// The convolution algorithm policy of the GPU backend, host side only: which fixed:<name> cuDNN
// has (the words themselves: train/conv_algorithm.h), cuDNN's algorithm names per pass, the key
// that identifies one convolution pass (shape, dtype, layout, math), and the process-wide cache of
// measured choices (optionally persisted to a file, one "key algo workspace ms math" per line).
// No cuDNN calls here: conv_cudnn.cc asks cuDNN and consults this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "train/conv_algorithm.h"

namespace stoker::gpu {

enum class ConvPass { forward, backward_data, backward_weights };
std::string_view pass_name(ConvPass pass);  // "forward", "backward_data", "backward_weights"

// The one vocabulary's policy; kind fixed names the algorithm as algo_name spells it.
using ConvPolicy = ConvAlgorithm;
// `a` as cuDNN takes it: stoker::Error listing cuDNN's algorithm names when a fixed one is none
// of them.
ConvPolicy cudnn_conv_policy(const ConvAlgorithm& a);

// cuDNN's algorithm enum names without the CUDNN_CONVOLUTION_<PASS>_ALGO_ prefix, in lower
// case, indexed by the enum value ("implicit_precomp_gemm", "winograd_nonfused", "0", ...).
std::span<const std::string_view> algo_names(ConvPass pass);
std::string algo_name(ConvPass pass, int algo);  // "algo#<n>" when out of range
// The enum value of `name` for this pass, or -1 when the pass has no such algorithm.
int algo_from_name(ConvPass pass, std::string_view name);

// Everything that decides which algorithms exist and how fast they are.
struct ConvKey {
  ConvPass pass = ConvPass::forward;
  int64_t n = 0, c = 0, h = 0, w = 0;  // input
  int64_t k = 0, r = 0, s = 0;         // output channels, filter height and width
  int stride = 1, pad = 0, dilation = 1, groups = 1;
  std::string_view dtype;   // "f32", "f16", "bf16"
  std::string_view layout;  // "nchw", "nhwc"
  bool tf32 = false;        // tensor-op math allowed on f32
  size_t workspace_limit = 0;
};
// A stable text form, e.g. "forward n32 c64 h56 w56 k64 r3 s3 st1 p1 d1 g1 f16 nhwc tf0
// ws1073741824". Device name and library version are prepended by the caller (conv_cudnn.cc).
std::string conv_key(const ConvKey& key);

struct AlgoEntry {
  int algo = -1;
  size_t workspace_bytes = 0;
  double measured_ms = 0;
  // The math type (cudnnMathType_t value) cuDNN ranked the algorithm with, which the pass
  // must run under for the measured kernel to be the one that runs; -1: the planned one.
  int math = -1;
};

// Measured choices by key, shared by every backend in the process (thread-safe).
class AlgoCache {
 public:
  static AlgoCache& process();
  std::optional<AlgoEntry> find(const std::string& key) const;
  void put(const std::string& key, const AlgoEntry& entry);
  size_t size() const;
  void clear();
  // Adds the entries of a file written by save (a missing file adds nothing); stoker::Error
  // naming the file and line on a malformed line. Returns the number of entries read.
  size_t load(const std::string& path);
  // Writes every entry atomically (temporary file, then rename); stoker::Error naming it.
  void save(const std::string& path) const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, AlgoEntry> entries_;
};

}  // namespace stoker::gpu
