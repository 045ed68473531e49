// SPDX-License-Identifier: Apache-2.0
// Placeholder until the report lands: a plain table of the cells.
#include "tools/report/report.h"

#include <fmt/format.h>

namespace stoker {

std::vector<std::string> conclusions(const nlohmann::json&) {
  return {};
}

std::string render_report(const nlohmann::json& study) {
  std::string rows;
  for (const auto& c : study.value("results", nlohmann::json::array()))
    rows += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                        c.value("dataset", ""), c.value("storage", ""), c.value("reader", ""),
                        c.value("images_per_s", 0.0));
  return fmt::format(
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>stoker study</title></head>"
      "<body><table>\n{}</table></body></html>\n",
      rows);
}

}  // namespace stoker
