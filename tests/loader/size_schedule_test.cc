// SPDX-License-Identifier: Apache-2.0
// The size schedule against FFCV's get_resolution (ffcv-imagenet, train_imagenet.py): the
// expected sizes below were printed by that function (numpy's interp and round, ties to
// even) under Debian's python3-numpy, not computed by us. Then the parser's usage errors.
#include "loader/sampler/size_schedule.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/error.h"

namespace stoker {
namespace {

struct FfcvCase {
  const char* text;
  int64_t first;          // the epoch of want[0]
  std::vector<int> want;  // get_resolution(epoch, min, max, end_ramp, start_ramp)
};

const FfcvCase kFfcv[] = {
    {"160:192@65-76",
     60,
     {160, 160, 160, 160, 160, 160, 160, 160, 160, 160, 160, 192, 192, 192, 192, 192, 192, 192,
      192}},
    {"128:192@0-10", 0, {128, 128, 128, 160, 160, 160, 160, 160, 192, 192, 192, 192, 192}},
    {"160:171@0-7", 0, {160, 160, 160, 160, 160, 160, 160, 171, 171, 171}},
    {"100:210@3-17", 0, {100, 100, 100, 100, 96,  128, 128, 128, 128, 160,
                         160, 160, 160, 192, 192, 192, 192, 210, 210, 210}},
    {"32:96@0-2", 0, {32, 64, 96, 96, 96}},
};

TEST(SizeSchedule, EqualsFfcvGetResolution) {
  for (const FfcvCase& c : kFfcv) {
    const SizeSchedule s = parse_size_schedule(c.text);
    EXPECT_EQ(s.text(), c.text);
    for (size_t k = 0; k < c.want.size(); ++k) {
      const uint64_t epoch = uint64_t(c.first) + k;
      EXPECT_EQ(s.at(epoch, 12345), c.want[k]) << c.text << " epoch " << epoch;
      EXPECT_LE(s.at(epoch, 0), s.largest()) << c.text;
    }
  }
}

TEST(SizeSchedule, StepsCountTheGlobalStep) {
  const SizeSchedule s = parse_size_schedule("128:192@steps:0-10");
  EXPECT_EQ(s.unit, SizeSchedule::Unit::steps);
  const std::vector<int> want = {128, 128, 128, 160, 160, 160, 160, 160, 192, 192, 192};
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(s.at(99, k), want[k]) << "step " << k;
}

TEST(SizeSchedule, LargestBoundsEveryValue) {
  const SizeSchedule s = parse_size_schedule("100:210@3-17");
  EXPECT_EQ(s.largest(), 224);  // an interior value may round past 210; the pool must hold it
  for (uint64_t e = 0; e < 40; ++e) EXPECT_LE(s.at(e, 0), s.largest());
  EXPECT_EQ(parse_size_schedule("160:192@65-76").largest(), 192);
  const SizeSchedule fixed = parse_size_schedule("96");
  EXPECT_EQ(fixed.at(0, 0), 96);
  EXPECT_EQ(fixed.at(1000, 1000), 96);
  EXPECT_EQ(fixed.text(), "96");
}

TEST(SizeSchedule, BadTextIsAUsageErrorSayingWhy) {
  const std::pair<const char*, const char*> bad[] = {
      {"192:160@0-5", "MIN 192 is larger than MAX 160"},
      {"160:192@9-5", "starts at 9 after it ends at 5"},
      {"16:192@0-5", "MIN 16 is outside 32..8192"},
      {"160:192", "needs @A-B"},
      {"160:192@5", "A-B after the @"},
      {"160:x@0-5", "MAX 'x' is not a whole number"},
      {"160:192@0-5e", "is not two whole numbers"},
      {"160:192@-1-5", "is not two whole numbers"},
      {"", "is not a whole number"},
      {"64x48", "the size '64x48' is HxW, but a schedule's sizes are square"},
      {"64x48:96x72@0-5", "MIN '64x48' is HxW"},
      {"64:96X72@0-5", "MAX '96X72' is HxW"},
  };
  for (const auto& [text, why] : bad) {
    try {
      parse_size_schedule(text);
      ADD_FAILURE() << "'" << text << "' was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--size-schedule"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace stoker
