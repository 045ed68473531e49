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
  if (tool == nullptr || *tool != "stoker study")
    fail(
        "report: '{}' is {}, not a study result: `stoker report` renders what `stoker study` "
        "writes to DIR/study.json",
        path,
        tool != nullptr && tool->is_string()
            ? fmt::format("the output of `{}`", tool->get<std::string>())
            : std::string("a document without a context naming its tool"));
  return study;
}

// Written beside the target and renamed over it, so a browser never sees half a page.
void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail("report: cannot write '{}': {}", tmp, errno_text(errno));
    out << text;
    out.flush();
    if (!out) fail("report: writing '{}' failed: {}", tmp, errno_text(errno));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    fail("report: cannot rename '{}' to '{}': {}", tmp, path, ec.message());
  }
}

void run_report(const ReportOptions& o) {
  const nlohmann::json study = read_study(o.result);
  const std::string html = render_report(study);
  if (o.out == "-") {
    std::fwrite(html.data(), 1, html.size(), stdout);
    return;
  }
  const std::string out =
      o.out.empty() ? (std::filesystem::path(o.result).parent_path() / "report.html").string()
                    : o.out;
  write_atomically(out, html);
  fmt::print("{}: report of {} cells from {}\n", out, study["results"].size(), o.result);
  for (const auto& s : conclusions(study)) fmt::print("- {}\n", s);
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "report", "Re-render the HTML report of a saved study result and print its conclusions");
  auto o = std::make_shared<ReportOptions>();
  cmd->add_option("result", o->result, "A study result (DIR/study.json of `stoker study`)")
      ->required();
  cmd->add_option("-o,--out", o->out,
                  "HTML file to write (default: report.html beside the result; - for stdout)");
  cmd->callback([o] { run_report(*o); });
}

}  // namespace stoker
