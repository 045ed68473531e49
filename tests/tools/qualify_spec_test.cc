// SPDX-License-Identifier: Apache-2.0
// `stoker qualify`'s pure parts (tools/qualify/qualify_spec.h): the storages with their links,
// the modes, the accelerator profile from a preset or a `train --json` result, the search
// over N (doubling, then bisection, never past the cap) and the bound rule's order.
#include "tools/qualify/qualify_spec.h"

#include <gtest/gtest.h>

#include <functional>

#include "common/error.h"

namespace stoker {
namespace {

TEST(QualifySpec, StoragesNameTheirKindAndLink) {
  const auto s = parse_qualify_storages("local,local-cold,nfs,nfs@unshaped,nfs@10gbit,nfs@500mbit");
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s[0].kind, QualifyStorage::Kind::local);
  EXPECT_EQ(s[1].kind, QualifyStorage::Kind::local_cold);
  EXPECT_EQ(s[2].kind, QualifyStorage::Kind::nfs);
  EXPECT_EQ(s[2].link, "");  // loopback
  EXPECT_EQ(s[3].link, "unshaped");
  EXPECT_EQ(s[4].link, "10gbit");
  EXPECT_EQ(s[5].name, "nfs@500mbit");
}

TEST(QualifySpec, BadStoragesModesAndProfilesAreUsageErrors) {
  for (const char* bad : {"", "disk", "nfs@", "nfs@fast", "nfs@0gbit", "local@1gbit", "nfs,nfs"})
    EXPECT_THROW(parse_qualify_storages(bad), UsageError) << bad;
  for (const char* bad : {"", "both", "decode,x"})
    EXPECT_THROW(parse_qualify_modes(bad), UsageError) << bad;
  EXPECT_THROW(parse_accelerator_profile("fast"), UsageError);
  EXPECT_THROW(parse_accelerator_profile("/no/such/run.json"), UsageError);
}

TEST(QualifySpec, ModesKeepTheirOrderOnce) {
  EXPECT_EQ(parse_qualify_modes("read,decode,read"),
            (std::vector<QualifyMode>{QualifyMode::read, QualifyMode::decode}));
}

TEST(QualifySpec, PresetsAndRates) {
  const AcceleratorProfile p = parse_accelerator_profile("resnet50-h100");
  EXPECT_NEAR(p.accelerator.images_per_s(), 400 / 0.224, 0.01);  // MLPerf Storage's
  EXPECT_EQ(p.from, "preset");
  EXPECT_NEAR(parse_accelerator_profile("6532img/s").accelerator.images_per_s(), 6532, 1e-6);
  EXPECT_EQ(parse_accelerator_profile("6532img/s").from, "rate");
}

TEST(QualifySpec, ATrainResultGivesItsMeasuredRate) {
  nlohmann::json doc = {{"context",
                         {{"tool", "stoker train"},
                          {"arch", "resnet50"},
                          {"precision", "f16"},
                          {"synthetic", true},
                          {"backend", "cuda cuDNN 9.19 ..."}}},
                        {"results", {{{"images_per_s", 6532.0}, {"data_wait_share", 0.0}}}}};
  AcceleratorProfile p = profile_from_train_json(doc, "/x/h200.json");
  EXPECT_NEAR(p.accelerator.images_per_s(), 6532, 1e-6);
  EXPECT_EQ(p.name, "cuda resnet50 f16 (h200.json)");
  EXPECT_EQ(p.note, "");
  // Measured with data that kept it waiting: said, since it is not the accelerator's own rate.
  doc["context"]["synthetic"] = false;
  doc["results"][0]["data_wait_share"] = 0.3;
  p = profile_from_train_json(doc, "run.json");
  EXPECT_NE(p.note.find("30% data wait"), std::string::npos) << p.note;
  // A result written before the key's rename (issue 44) names it data_wait_fraction.
  doc["results"][0].erase("data_wait_share");
  doc["results"][0]["data_wait_fraction"] = 0.4;
  p = profile_from_train_json(doc, "old.json");
  EXPECT_NE(p.note.find("40% data wait"), std::string::npos) << p.note;
  // No rate (a refused one, or another command's document): a usage error naming the file.
  doc["results"][0].erase("images_per_s");
  try {
    profile_from_train_json(doc, "run.json");
    ADD_FAILURE() << "accepted a result without a rate";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("run.json"), std::string::npos) << e.what();
  }
}

// Runs the search against a storage that feeds `answer` accelerators; returns the Ns tried.
std::vector<int> search(int answer, int cap, int* result) {
  std::vector<int> tried;
  int held = 0, failed = 0;
  for (int n; (n = next_accelerators(held, failed, cap)) != 0;) {
    tried.push_back(n);
    EXPECT_LE(n, cap);
    EXPECT_LT((int)tried.size(), 40) << "no end";
    if (tried.size() >= 40) break;
    (n <= answer ? held : failed) = n;
  }
  *result = held;
  return tried;
}

TEST(QualifySpec, TheSearchDoublesThenBisectsToTheLargestThatHolds) {
  int got = -1;
  EXPECT_EQ(search(5, 64, &got), (std::vector<int>{1, 2, 4, 8, 6, 5}));
  EXPECT_EQ(got, 5);
  EXPECT_EQ(search(0, 64, &got), (std::vector<int>{1}));
  EXPECT_EQ(got, 0);
  EXPECT_EQ(search(100, 12, &got), (std::vector<int>{1, 2, 4, 8, 12}));  // the cap holds
  EXPECT_EQ(got, 12);
  for (int answer = 0; answer <= 40; ++answer) {
    search(answer, 33, &got);
    EXPECT_EQ(got, std::min(answer, 33)) << answer;
  }
}

TEST(QualifySpec, TheBoundRuleNamesTheLinkFirstThenTheBusiestCores) {
  BoundFacts f;
  f.host_cores = 2;
  f.link_mb_per_s = 117;
  f.mb_per_s = 110;  // >= 85% of the link
  f.loader_cores = 1.9;
  EXPECT_EQ(qualify_bound(f), "link");
  f.mb_per_s = 50;
  EXPECT_EQ(qualify_bound(f), "decode");
  f.decode = false;
  EXPECT_EQ(qualify_bound(f), "cpu");
  f.loader_cores = 0.4;
  f.server_cores = 1.3;
  EXPECT_EQ(qualify_bound(f), "server");
  f.server_cores = 0.3;
  EXPECT_EQ(qualify_bound(f), "latency");
  // Others' work on the machine leaves no free core either.
  f.machine_cores = 1.95;
  EXPECT_EQ(qualify_bound(f), "cpu");
}

}  // namespace
}  // namespace stoker
