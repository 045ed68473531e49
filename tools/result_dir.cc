// SPDX-License-Identifier: Apache-2.0
#include "tools/result_dir.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/error.h"
#include "loader/index/index.h"
#include "loader/sources/nfs_url.h"
#include "tools/bench/bench_common.h"

namespace stoker {

namespace fs = std::filesystem;

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string out;
  for (char c : all) out += c == '\0' ? ' ' : c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string default_out(const std::string& prefix) {
  std::string now = utc_now();  // 2026-11-23T17:00:00Z -> study-20261123-170000
  std::string digits;
  for (char c : now)
    if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
  return fmt::format("{}-{}-{}", prefix, digits.substr(0, 8), digits.substr(8, 6));
}

void prepare_out(const std::string& dir, bool force, const std::string& result_file) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("--out {}: cannot create it: {}", dir, ec.message());
  if (!force && fs::exists(fs::path(dir) / result_file))
    usage_fail("--out {}: holds a result already ({}); give --force to replace it", dir,
               result_file);
  const std::string probe = (fs::path(dir) / ".stoker-result-probe").string();
  {
    std::ofstream p(probe);
    if (!p || !(p << "probe\n") || !(p.flush()))
      fail("--out {}: cannot write there: {}", dir, errno_text(errno));
  }
  fs::remove(probe, ec);
}

void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) fail("cannot write {}: {}", tmp, errno_text(errno));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) fail("cannot rename {} to {}: {}", tmp, path, ec.message());
}

void write_result_and_report(const std::string& dir, const std::string& result_file,
                             const nlohmann::json& doc,
                             const std::function<std::string(const nlohmann::json&)>& render) {
  write_atomically((fs::path(dir) / result_file).string(), doc.dump(2) + "\n");
  std::string html;
  try {
    html = render(doc);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stoker: warning: the report could not be rendered: %s\n", e.what());
    return;
  }
  write_atomically((fs::path(dir) / "report.html").string(), html);
}

int resolution_of(const std::string& name) {
  int r = 0;
  for (char c : name) {
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    r = r * 10 + (c - '0');
  }
  return r;
}

nlohmann::json dataset_json(const std::string& root, const Index& index, int resolution) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (uint64_t b : index.bytes) {
    lo = std::min(lo, b);
    hi = std::max(hi, b);
  }
  const uint64_t total = index.total_bytes();
  return {{"name", short_name(root)},
          {"root", is_nfs_url(root) ? root : fs::absolute(root).lexically_normal().string()},
          {"resolution", resolution ? nlohmann::json(resolution) : nlohmann::json(nullptr)},
          {"images", index.size()},
          {"classes", index.classes.size()},
          {"bytes", total},
          {"mean_bytes", index.size() ? total / index.size() : 0},
          {"min_bytes", index.size() ? lo : 0},
          {"max_bytes", hi}};
}

}  // namespace stoker
