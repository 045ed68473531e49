// SPDX-License-Identifier: Apache-2.0
#include "tools/output_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "common/error.h"

namespace fs = std::filesystem;

namespace stoker {

namespace {

// A new file can be made in `dir`: tried for real (permission bits alone say nothing about a
// read-only mount, and root passes every access() test).
void check_creatable_in(const std::string& option, const std::string& path,
                        const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    fail("{} {}: the directory {} {}", option, path, dir,
         errno == ENOENT ? "does not exist" : "cannot be read: " + errno_text(errno));
  if (!S_ISDIR(st.st_mode)) fail("{} {}: {} is not a directory", option, path, dir);
  const std::string probe = (fs::path(dir) / fmt::format(".stoker-probe.{}", ::getpid())).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) fail("{} {}: cannot create a file in {}: {}", option, path, dir, errno_text(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

std::string parent_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

}  // namespace

void check_writable(const std::string& option, const std::string& path) {
  if (path.empty()) return;
  if (path.back() == '/') fail("{} {}: expected a file name, not a directory", option, path);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) fail("{} {}: is a directory; expected a file name", option, path);
    // Opened without O_TRUNC: the check leaves an existing file as it was.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) fail("{} {}: cannot be written: {}", option, path, errno_text(errno));
    ::close(fd);
  }
  // Atomic writers (checkpoints) make a temporary file beside the output: the directory must
  // take new files even when the output exists.
  check_creatable_in(option, path, parent_of(path));
}

void check_writable_dir(const std::string& option, const std::string& dir) {
  if (dir.empty()) return;
  fs::path p = fs::path(dir);
  std::error_code ec;
  // The nearest existing ancestor: what create_directories will write into.
  while (!p.empty() && !fs::exists(p, ec)) p = p.parent_path();
  const std::string existing = p.empty() ? std::string(".") : p.string();
  check_creatable_in(option, dir, existing);
}

}  // namespace stoker
