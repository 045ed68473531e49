// SPDX-License-Identifier: Apache-2.0
// parse_emulation: every form the docs and its own error message offer is accepted with the
// right rate, and malformed ones are refused with a message that lists the forms.
#include "train/emulated_accelerator.h"

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"

namespace stoker {
namespace {

TEST(ParseEmulation, EveryDocumentedForm) {
  EXPECT_DOUBLE_EQ(parse_emulation("resnet50-h100").seconds_per_image, 0.224 / 400);
  EXPECT_DOUBLE_EQ(parse_emulation("1786").images_per_s(), 1786);
  EXPECT_DOUBLE_EQ(parse_emulation("1786img/s").images_per_s(), 1786);  // issue 12
  EXPECT_DOUBLE_EQ(parse_emulation("2.5img/s").images_per_s(), 2.5);
  EXPECT_DOUBLE_EQ(parse_emulation("224ms/400").seconds_per_image, 0.224 / 400);
  EXPECT_DOUBLE_EQ(parse_emulation("1s/100").seconds_per_image, 0.01);
  EXPECT_DOUBLE_EQ(parse_emulation("500us/1").seconds_per_image, 500e-6);
  EXPECT_EQ(parse_emulation("1786img/s").spec, "1786img/s");
}

TEST(ParseEmulation, RefusesMalformedForms) {
  for (const std::string bad :
       {"", "0", "-5", "abc", "img/s", "0img/s", "1786img", "1786 img/s", "224ms/", "/400",
        "224/400", "224ms/0", "224ms/400img/s", "1786img/s/2", "resnet50", "nan", "inf", "1e400"}) {
    try {
      parse_emulation(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("'" + bad + "'"), std::string::npos) << m;
      EXPECT_NE(m.find("1786img/s"), std::string::npos) << m;
      EXPECT_NE(m.find("224ms/400"), std::string::npos) << m;
    }
  }
}

}  // namespace
}  // namespace stoker
