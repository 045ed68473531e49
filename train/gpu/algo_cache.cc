// SPDX-License-Identifier: Apache-2.0
#include "train/gpu/algo_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "common/error.h"

namespace stoker::gpu {
namespace {

// Enum order of cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t (cudnn_ops.h).
constexpr std::array<std::string_view, 8> kForward = {
    "implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling",
    "winograd",      "winograd_nonfused"};
constexpr std::array<std::string_view, 6> kBackwardData = {
    "0", "1", "fft", "fft_tiling", "winograd", "winograd_nonfused"};
constexpr std::array<std::string_view, 7> kBackwardFilter = {
    "0", "1", "fft", "3", "winograd", "winograd_nonfused", "fft_tiling"};

constexpr std::array<ConvPass, 3> kPasses = {ConvPass::forward, ConvPass::backward_data,
                                             ConvPass::backward_weights};

std::string all_names() {
  std::string out;
  for (ConvPass p : kPasses) {
    out += fmt::format("{}{}: ", out.empty() ? "" : "; ", pass_name(p));
    for (size_t i = 0; i < algo_names(p).size(); ++i)
      out += fmt::format("{}{}", i ? ", " : "", algo_names(p)[i]);
  }
  return out;
}

}  // namespace

std::string_view pass_name(ConvPass pass) {
  switch (pass) {
    case ConvPass::forward:
      return "forward";
    case ConvPass::backward_data:
      return "backward_data";
    case ConvPass::backward_weights:
      return "backward_weights";
  }
  return "?";
}

std::span<const std::string_view> algo_names(ConvPass pass) {
  switch (pass) {
    case ConvPass::forward:
      return kForward;
    case ConvPass::backward_data:
      return kBackwardData;
    case ConvPass::backward_weights:
      return kBackwardFilter;
  }
  return {};
}

std::string algo_name(ConvPass pass, int algo) {
  const auto names = algo_names(pass);
  if (algo >= 0 && size_t(algo) < names.size()) return std::string(names[size_t(algo)]);
  return fmt::format("algo#{}", algo);
}

int algo_from_name(ConvPass pass, std::string_view name) {
  const auto names = algo_names(pass);
  const auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : int(it - names.begin());
}

ConvPolicy cudnn_conv_policy(const ConvAlgorithm& a) {
  if (a.kind != ConvPolicy::Kind::fixed) return a;
  for (ConvPass p : kPasses)
    if (algo_from_name(p, a.fixed) >= 0) return a;
  fail("convolution algorithm '{}': cuDNN has no algorithm '{}' (known, per pass: {})", a, a.fixed,
       all_names());
}

std::string conv_key(const ConvKey& k) {
  return fmt::format("{} n{} c{} h{} w{} k{} r{} s{} st{} p{} d{} g{} {} {} tf{} ws{}",
                     pass_name(k.pass), k.n, k.c, k.h, k.w, k.k, k.r, k.s, k.stride, k.pad,
                     k.dilation, k.groups, k.dtype, k.layout, k.tf32 ? 1 : 0, k.workspace_limit);
}

AlgoCache& AlgoCache::process() {
  static AlgoCache cache;
  return cache;
}

std::optional<AlgoEntry> AlgoCache::find(const std::string& key) const {
  std::lock_guard lock(mutex_);
  const auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

void AlgoCache::put(const std::string& key, const AlgoEntry& entry) {
  STOKER_CHECK(key.find('\t') == std::string::npos && key.find('\n') == std::string::npos);
  std::lock_guard lock(mutex_);
  entries_[key] = entry;
}

size_t AlgoCache::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

void AlgoCache::clear() {
  std::lock_guard lock(mutex_);
  entries_.clear();
}

// One entry per line: key, TAB, algo, TAB, workspace bytes, TAB, milliseconds, TAB, math type
// (files written before the math type was kept lack it: -1, the planned one).
size_t AlgoCache::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    if (errno == ENOENT) return 0;
    fail("algorithm cache {}: cannot read: {}", path, errno_text(errno));
  }
  std::string line;
  size_t count = 0, number = 0;
  std::unordered_map<std::string, AlgoEntry> read;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    const size_t tab = line.find('\t');
    AlgoEntry e;
    std::istringstream rest(tab == std::string::npos ? std::string() : line.substr(tab + 1));
    bool ok = tab != 0 && tab != std::string::npos &&
              (rest >> e.algo >> e.workspace_bytes >> e.measured_ms) && e.algo >= 0;
    // The math type is optional; when present it must be the last field.
    if (ok && !(rest >> std::ws).eof())
      ok = (rest >> e.math) && e.math >= -1 && (rest >> std::ws).eof();
    if (!ok)
      fail(
          "algorithm cache {}:{}: expected 'key<TAB>algo<TAB>workspace<TAB>ms[<TAB>math]', found "
          "'{}'",
          path, number, line);
    read[line.substr(0, tab)] = e;
    ++count;
  }
  std::lock_guard lock(mutex_);
  for (auto& [k, e] : read) entries_[k] = e;
  return count;
}

void AlgoCache::save(const std::string& path) const {
  std::map<std::string, AlgoEntry> sorted;  // stable file contents
  {
    std::lock_guard lock(mutex_);
    sorted.insert(entries_.begin(), entries_.end());
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) fail("algorithm cache {}: cannot write: {}", tmp, errno_text(errno));
    for (const auto& [k, e] : sorted)
      out << k << '\t' << e.algo << '\t' << e.workspace_bytes << '\t'
          << fmt::format("{:.6g}", e.measured_ms) << '\t' << e.math << '\n';
    out.flush();
    if (!out) fail("algorithm cache {}: write failed: {}", tmp, errno_text(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    fail("algorithm cache {}: cannot rename from {}: {}", path, tmp, errno_text(errno));
}

}  // namespace stoker::gpu
