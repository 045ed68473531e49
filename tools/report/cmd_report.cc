// SPDX-License-Identifier: Apache-2.0
// stoker report: re-renders the HTML report of a saved study result (study.json) and prints
// its conclusions. The rendering itself is tools/report/ (the same code `stoker study`
// calls after every cell); this file only reads, checks the shape, and writes.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/error.h"
#include "tools/commands.h"
#include "tools/report/report.h"
#include "tools/result_dir.h"

namespace stoker {

namespace {

struct ReportOptions {
  std::string result;
  std::string out;  // empty: report.html beside the result
};

nlohmann::json read_study(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("report: cannot open '{}': {}", path, errno_text(errno));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json study;
  try {
    study = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    fail("report: '{}' is not valid JSON: {}", path, e.what());
  }
  if (!study.is_object() || !study.contains("results") || !study["results"].is_array())
    fail(
        "report: '{}' is not a study result: expected an object with a \"results\" array "
        "(and a \"context\"), as `stoker study` writes to DIR/study.json",
        path);
  // Every command writes {context, results}: the context's "tool" says whose it is.
  const nlohmann::json* tool = nullptr;
  if (study.contains("context") && study["context"].is_object() &&
      study["context"].contains("tool"))
    tool = &study["context"]["tool"];
  if (tool == nullptr || (*tool != "stoker study" && *tool != "stoker qualify"))
    fail(
        "report: '{}' is {}, not a study or qualification result: `stoker report` renders what "
        "`stoker study` writes to DIR/study.json and `stoker qualify` to DIR/qualify.json",
        path,
        tool != nullptr && tool->is_string()
            ? fmt::format("the output of `{}`", tool->get<std::string>())
            : std::string("a document without a context naming its tool"));
  return study;
}

void run_report(const ReportOptions& o) {
  const nlohmann::json study = read_study(o.result);
  const bool qualify = study["context"]["tool"] == "stoker qualify";
  const std::string html = qualify ? render_qualify_report(study) : render_report(study);
  if (o.out == "-") {
    std::fwrite(html.data(), 1, html.size(), stdout);
    return;
  }
  const std::string out =
      o.out.empty() ? (std::filesystem::path(o.result).parent_path() / "report.html").string()
                    : o.out;
  write_atomically(out, html);
  fmt::print("{}: report of {} {} from {}\n", out, study["results"].size(),
             qualify ? "searches" : "cells", o.result);
  for (const auto& s : qualify ? qualify_answer(study) : conclusions(study))
    fmt::print("- {}\n", s);
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "report",
      "Re-render the HTML report of a saved study (or qualification) result and print its "
      "conclusions (its answer)");
  auto o = std::make_shared<ReportOptions>();
  cmd->add_option("result", o->result,
                  "A study result (DIR/study.json of `stoker study`) or a qualification's "
                  "(DIR/qualify.json of `stoker qualify`)")
      ->required();
  cmd->add_option("-o,--out", o->out,
                  "HTML file to write (default: report.html beside the result; - for stdout)");
  cmd->callback([o] { run_report(*o); });
}

}  // namespace stoker
