// SPDX-License-Identifier: Apache-2.0
// Shared test helpers: a temporary directory that cleans up after itself, file writing,
// running an external tool (djpeg, cjpeg, the stoker binary), reading PNM files, and
// EXPECT_ERROR for what an error says.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "skip_policy.h"

// The statement (the arguments after `text`) must throw stoker::Error whose message contains
// `text`: the file, option or value a user needs to see, not merely an error of some kind.
#define EXPECT_ERROR(text, ...)                                                              \
  do {                                                                                       \
    try {                                                                                    \
      __VA_ARGS__;                                                                           \
      ADD_FAILURE() << "no stoker::Error from " #__VA_ARGS__;                                \
    } catch (const ::stoker::Error& error_) {                                                \
      EXPECT_NE(std::string(error_.what()).find(text), std::string::npos)                    \
          << #__VA_ARGS__ << " threw \"" << error_.what() << "\", which does not mention \"" \
          << (text) << "\"";                                                                 \
    }                                                                                        \
  } while (0)

namespace stoker::test {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "stoker-test-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

inline void write_text(const std::string& path, const std::string& text) {
  write_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs a shell command; returns its exit status and appends its stdout+stderr to `output`.
inline int run(const std::string& command, std::string* output = nullptr) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  std::string out;
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  if (output) *output += out;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline bool have_tool(const std::string& name) {
  return run("command -v " + name + " >/dev/null") == 0;
}

// A PPM/PGM written by djpeg, as HxWx3 RGB (grey expanded).
inline cv::Mat read_pnm_rgb(const std::string& path) {
  cv::Mat m = cv::imread(path, cv::IMREAD_UNCHANGED);
  cv::Mat rgb;
  if (m.channels() == 1) {
    cv::Mat tmp[] = {m, m, m};
    cv::merge(tmp, 3, rgb);
  } else {
    cv::cvtColor(m, rgb, cv::COLOR_BGR2RGB);
  }
  return rgb;
}

// Number of differing bytes between two same-sized 8-bit images (-1 if sizes differ).
inline long count_diff(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return -1;
  cv::Mat d;
  cv::compare(a.reshape(1), b.reshape(1), d, cv::CMP_NE);
  return cv::countNonZero(d);
}

}  // namespace stoker::test
