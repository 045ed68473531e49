// SPDX-License-Identifier: Apache-2.0
// The GPU backend's convolution algorithm policy, host side: policy parsing and its errors,
// cuDNN's algorithm names per pass (checked against the enum values in cudnn.h), the cache
// key, and the process-wide cache with its file round trip.
#include "train/gpu/algo_cache.h"

#include <cudnn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/error.h"

namespace stoker::gpu {
namespace {

std::string error_of(auto&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The words through the one parser (train/conv_algorithm.h), then cuDNN's check of the name.
ConvPolicy parse_conv_policy(std::string_view word) {
  return cudnn_conv_policy(parse_conv_algorithm(word));
}

TEST(ConvPolicy, ParsesTheThreeForms) {
  EXPECT_EQ(parse_conv_policy("heuristic").kind, ConvPolicy::Kind::heuristic);
  EXPECT_EQ(parse_conv_policy("exhaustive").kind, ConvPolicy::Kind::exhaustive);
  const ConvPolicy p = parse_conv_policy("fixed:implicit_precomp_gemm");
  EXPECT_EQ(p.kind, ConvPolicy::Kind::fixed);
  EXPECT_EQ(p.fixed, "implicit_precomp_gemm");
  // A name that exists for the backward passes only is still a valid fixed choice.
  EXPECT_EQ(parse_conv_policy("fixed:0").fixed, "0");
  EXPECT_EQ(parse_conv_policy("fixed:winograd_nonfused").kind, ConvPolicy::Kind::fixed);
}

TEST(ConvPolicy, RejectsOtherWordsNamingTheValidOnes) {
  const std::string e = error_of([] { parse_conv_policy("fastest"); });
  EXPECT_NE(e.find("'fastest'"), std::string::npos) << e;
  EXPECT_NE(e.find("heuristic, exhaustive or fixed:<name>"), std::string::npos) << e;
  const std::string f = error_of([] { parse_conv_policy("fixed:direct_please"); });
  EXPECT_NE(f.find("no algorithm 'direct_please'"), std::string::npos) << f;
  EXPECT_NE(f.find("implicit_precomp_gemm"), std::string::npos) << f;
  EXPECT_NE(error_of([] { parse_conv_policy("fixed:"); }), "");
  EXPECT_NE(error_of([] { parse_conv_policy(""); }), "");
}

TEST(AlgoNames, MatchCudnnEnumValues) {
  EXPECT_EQ(algo_names(ConvPass::forward).size(), size_t(CUDNN_CONVOLUTION_FWD_ALGO_COUNT));
  EXPECT_EQ(algo_names(ConvPass::backward_data).size(),
            size_t(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT));
  EXPECT_EQ(algo_names(ConvPass::backward_weights).size(),
            size_t(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT));
  EXPECT_EQ(algo_from_name(ConvPass::forward, "implicit_precomp_gemm"),
            int(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM));
  EXPECT_EQ(algo_from_name(ConvPass::forward, "winograd_nonfused"),
            int(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED));
  EXPECT_EQ(algo_from_name(ConvPass::backward_data, "fft_tiling"),
            int(CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING));
  EXPECT_EQ(algo_from_name(ConvPass::backward_weights, "fft_tiling"),
            int(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING));
  EXPECT_EQ(algo_from_name(ConvPass::backward_weights, "3"),
            int(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3));
  EXPECT_EQ(algo_from_name(ConvPass::forward, "0"), -1);  // backward-only name
  EXPECT_EQ(algo_from_name(ConvPass::backward_data, "gemm"), -1);
  EXPECT_EQ(algo_name(ConvPass::forward, CUDNN_CONVOLUTION_FWD_ALGO_GEMM), "gemm");
  EXPECT_EQ(algo_name(ConvPass::forward, 99), "algo#99");
  for (ConvPass p : {ConvPass::forward, ConvPass::backward_data, ConvPass::backward_weights})
    for (size_t i = 0; i < algo_names(p).size(); ++i)
      EXPECT_EQ(algo_from_name(p, algo_names(p)[i]), int(i));
}

TEST(ConvKey, DistinguishesEverythingThatChangesTheChoice) {
  const ConvKey base{.pass = ConvPass::forward,
                     .n = 32,
                     .c = 64,
                     .h = 56,
                     .w = 56,
                     .k = 64,
                     .r = 3,
                     .s = 3,
                     .stride = 1,
                     .pad = 1,
                     .dtype = "f16",
                     .layout = "nhwc",
                     .workspace_limit = 1 << 30};
  EXPECT_EQ(conv_key(base),
            "forward n32 c64 h56 w56 k64 r3 s3 st1 p1 d1 g1 f16 nhwc tf0 ws1073741824");
  std::vector<ConvKey> variants(9, base);
  variants[0].pass = ConvPass::backward_data;
  variants[1].n = 16;
  variants[2].stride = 2;
  variants[3].dtype = "bf16";
  variants[4].layout = "nchw";
  variants[5].tf32 = true;
  variants[6].workspace_limit = 0;
  variants[7].pad = 0;
  variants[8].k = 128;
  std::set<std::string> keys = {conv_key(base)};
  for (const ConvKey& v : variants) keys.insert(conv_key(v));
  EXPECT_EQ(keys.size(), variants.size() + 1);
}

class AlgoCacheFile : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() /
             ("stoker_algo_cache_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
};

TEST_F(AlgoCacheFile, PutFindSaveLoad) {
  AlgoCache cache;
  EXPECT_FALSE(cache.find("a").has_value());
  cache.put("H100 cudnn91900 sm90 forward n1", {1, 4096, 0.25});
  cache.put("H100 cudnn91900 sm90 backward_data n1", {5, 0, 1.5});
  cache.put("H100 cudnn91900 sm90 forward n1", {6, 8192, 0.125, 1});  // replaces
  EXPECT_EQ(cache.size(), 2u);
  const auto hit = cache.find("H100 cudnn91900 sm90 forward n1");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->algo, 6);
  EXPECT_EQ(hit->workspace_bytes, 8192u);
  EXPECT_DOUBLE_EQ(hit->measured_ms, 0.125);

  const std::string path = (dir / "algos.tsv").string();
  cache.save(path);
  AlgoCache other;
  EXPECT_EQ(other.load(path), 2u);
  EXPECT_EQ(other.size(), 2u);
  EXPECT_EQ(other.find("H100 cudnn91900 sm90 backward_data n1")->algo, 5);
  EXPECT_DOUBLE_EQ(other.find("H100 cudnn91900 sm90 backward_data n1")->measured_ms, 1.5);
  // The math type cuDNN ranked each with travels too (-1: the planned one).
  EXPECT_EQ(other.find("H100 cudnn91900 sm90 forward n1")->math, 1);
  EXPECT_EQ(other.find("H100 cudnn91900 sm90 backward_data n1")->math, -1);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_EQ(other.load((dir / "missing.tsv").string()), 0u);
}

// Files written before the math type was kept have four fields: read with the planned one.
TEST_F(AlgoCacheFile, FourFieldLinesReadWithThePlannedMathType) {
  const std::string path = (dir / "old.tsv").string();
  std::ofstream(path) << "key one\t1\t0\t0.5\nkey two\t2\t64\t1\t3\n";
  AlgoCache cache;
  EXPECT_EQ(cache.load(path), 2u);
  EXPECT_EQ(cache.find("key one")->math, -1);
  EXPECT_EQ(cache.find("key two")->math, 3);
  std::ofstream(path) << "key one\t1\t0\t0.5\t2\tjunk\n";
  EXPECT_NE(error_of([&] { cache.load(path); }).find(path + ":1"), std::string::npos);
}

TEST_F(AlgoCacheFile, MalformedLineNamesFileAndLine) {
  const std::string path = (dir / "bad.tsv").string();
  std::ofstream(path) << "key one\t1\t0\t0.5\nkey two\tnot-a-number\t0\t1\n";
  AlgoCache cache;
  const std::string e = error_of([&] { cache.load(path); });
  EXPECT_NE(e.find(path + ":2"), std::string::npos) << e;
  EXPECT_EQ(cache.size(), 0u);  // nothing half-read
}

TEST(AlgoCacheProcess, IsOneInstance) {
  EXPECT_EQ(&AlgoCache::process(), &AlgoCache::process());
}

}  // namespace
}  // namespace stoker::gpu
