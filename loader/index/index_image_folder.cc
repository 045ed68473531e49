// SPDX-License-Identifier: Apache-2.0
// ImageFolder scanning of a local tree: a DirLister over openat/readdir/fstatat (one stat per
// file, for its size) for the shared walk (image_folder_walk.h), which lists class
// directories in parallel and keeps names in flat pools while sorting.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>

#include "common/error.h"
#include "loader/index/image_folder_walk.h"
#include "loader/index/index.h"

namespace stoker {

namespace {

using image_folder::DirLister;
using image_folder::Listing;
using image_folder::push_name;

// Lists one directory (non-hidden entries only), resolving types and sizes with fstatat.
// `display` names the directory in errors.
void list_dir(int dfd, const std::string& display, Listing& out) {
  const int fd2 = dup(dfd);
  DIR* dir = fd2 >= 0 ? fdopendir(fd2) : nullptr;
  if (!dir) {
    if (fd2 >= 0) close(fd2);
    fail("cannot list directory '{}': {}", display, errno_text(errno));
  }
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;  // ".", "..", and hidden entries
    struct stat st {};
    if (fstatat(dfd, e->d_name, &st, 0) != 0) continue;  // dangling symlink: not a sample
    if (S_ISDIR(st.st_mode)) {
      out.dirs.push_back(push_name(out.pool, e->d_name));
    } else if (S_ISREG(st.st_mode) && has_image_extension(e->d_name)) {
      out.files.push_back(push_name(out.pool, e->d_name));
      out.file_size.push_back(static_cast<uint64_t>(st.st_size));
    }
  }
  closedir(dir);
}

// Directories below an open root descriptor (shared by every thread's lister, read only).
class LocalLister final : public DirLister {
 public:
  LocalLister(int root_fd, const std::string& root) : root_fd_(root_fd), root_(root) {}
  void list(const std::string& rel, Listing& out) override {
    if (rel.empty()) return list_dir(root_fd_, root_, out);
    const int fd = openat(root_fd_, rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) fail("cannot open directory '{}': {}", display(rel), errno_text(errno));
    try {
      list_dir(fd, display(rel), out);
    } catch (...) {
      close(fd);
      throw;
    }
    close(fd);
  }
  std::string display(const std::string& rel) const override {
    return rel.empty() ? root_ : root_ + "/" + rel;
  }

 private:
  int root_fd_;
  const std::string& root_;
};

}  // namespace

Index index_image_folder(const std::string& root_in) {
  std::string root = root_in;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  const int root_fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) {
    fail("dataset root '{}': {} (expected a directory laid out as root/<class>/<image>)", root,
         errno_text(errno));
  }
  LocalLister top(root_fd, root);
  try {
    Index index = image_folder::walk_image_folder(
        root, top, [&] { return std::make_unique<LocalLister>(root_fd, root); });
    close(root_fd);
    return index;
  } catch (...) {
    close(root_fd);
    throw;
  }
}

}  // namespace stoker
