// SPDX-License-Identifier: Apache-2.0
// The study's axis parsing (readers with repeated kinds and ranges, the grammar of every
// command's --reader: tools/options/loader_options.h; storages, consumers) and the bound rule's
// thresholds (tools/study/study_spec.h).
#include "tools/study/study_spec.h"

#include <gtest/gtest.h>

#include "common/error.h"
#include "test_util.h"
#include "tools/options/loader_options.h"

namespace stoker {
namespace {

std::vector<std::string> texts(const std::vector<ReaderSpec>& rs) {
  std::vector<std::string> out;
  for (const ReaderSpec& r : rs) out.push_back(r.text());
  return out;
}

TEST(StudySpec, ReadersRepeatTheKindBeforeABareCountAndExpandRanges) {
  EXPECT_EQ(texts(parse_reader_list("serial,processes:1,2,4,threads:2")),
            (std::vector<std::string>{"serial", "processes:1", "processes:2", "processes:4",
                                      "threads:2"}));
  EXPECT_EQ(texts(parse_reader_list("processes:1..3,serial")),
            (std::vector<std::string>{"processes:1", "processes:2", "processes:3", "serial"}));
  // uring's counts are queue depths; its decode threads carry over to the bare counts.
  EXPECT_EQ(texts(parse_reader_list("uring:8:2,32")),
            (std::vector<std::string>{"uring:8:2", "uring:32:2"}));
}

TEST(StudySpec, BadReadersAreErrorsNamingThePart) {
  for (const char* bad : {"", "4", "serial,4", "bogus:3", "threads:0", "processes:3..1",
                          "threads:x", "processes:1..2000"}) {
    try {
      parse_reader_list(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("reader"), std::string::npos) << e.what();
    }
  }
}

TEST(StudySpec, StoragesAndConsumers) {
  const auto s = parse_study_storages("nfs-shards,local,local-cold");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_STREQ(storage_name(s[0]), "nfs-shards");
  EXPECT_STREQ(storage_name(s[2]), "local-cold");
  EXPECT_ERROR("ssd", parse_study_storages("local,ssd"));
  const auto c = parse_study_consumers("emulated:resnet50-h100,cpu:resnet18,cuda:resnet50");
  ASSERT_EQ(c.size(), 3u);
  EXPECT_NEAR(c[0].accelerator.images_per_s(), 400 / 0.224, 1e-6);
  EXPECT_EQ(c[1].arch, "resnet18");
  EXPECT_STREQ(c[2].kind_name(), "cuda");
  EXPECT_ERROR("resnet19", parse_study_consumers("cpu:resnet19"));
  EXPECT_ERROR("emulated:", parse_study_consumers("emulated:"));
  EXPECT_ERROR("tpu", parse_study_consumers("tpu:resnet50"));
}

TEST(StudySpec, BoundRule) {
  // Under 10% waiting: the consumer bounds, whatever the loader's stages cost.
  EXPECT_EQ(study_bound(0.099, 9, 1, 0, 0), "compute");
  EXPECT_EQ(study_bound(0.10, 2, 1, 0.5, 0.5), "read");  // read is exactly half
  EXPECT_EQ(study_bound(0.5, 1, 3, 0.5, 0.5), "decode");
  EXPECT_EQ(study_bound(0.5, 1, 1.9, 1, 0.1), "loader");  // decode 0.475 of 4.0
  EXPECT_EQ(study_bound(0.5, 0, 0, 0, 0), "loader");
}

TEST(StudySpec, DecodeLists) {
  EXPECT_EQ(parse_study_decodes("cpu"), std::vector<bool>{false});
  EXPECT_EQ(parse_study_decodes("gpu"), std::vector<bool>{true});
  EXPECT_EQ(parse_study_decodes("cpu,gpu"), (std::vector<bool>{false, true}));
  EXPECT_THROW(parse_study_decodes("tpu"), Error);
  EXPECT_THROW(parse_study_decodes("gpu,gpu"), Error);
  EXPECT_THROW(parse_study_decodes(""), Error);
}

}  // namespace
}  // namespace stoker
