// SPDX-License-Identifier: Apache-2.0
// ImageFolder scanning with openat/readdir/fstatat (one stat per file, for its size),
// class directories scanned in parallel, names kept in flat pools while sorting.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "common/error.h"
#include "loader/index/image_folder_order.h"
#include "loader/index/index.h"

namespace stoker {

namespace {

using image_folder::assemble;
using image_folder::ClassFiles;
using image_folder::ListedDir;
using image_folder::Listing;
using image_folder::order_class;
using image_folder::push_name;
using image_folder::sort_names;

constexpr int kScanThreads = 16;

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

void walk_class(int root_fd, const std::string& root, const std::string& cls, ClassFiles& out) {
  std::vector<ListedDir> dirs;
  std::vector<std::string> pending = {cls};
  while (!pending.empty()) {
    std::string rel = std::move(pending.back());
    pending.pop_back();
    if (std::count(rel.begin(), rel.end(), '/') > 64) {
      fail("'{}/{}': directories nested more than 64 deep (a symlink loop?)", root, rel);
    }
    const int fd = openat(root_fd, rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) fail("cannot open directory '{}/{}': {}", root, rel, errno_text(errno));
    ListedDir d{rel, {}};
    try {
      list_dir(fd, root + "/" + rel, d.listing);
    } catch (...) {
      close(fd);
      throw;
    }
    close(fd);
    for (uint32_t off : d.listing.dirs)
      pending.push_back(rel + "/" + (d.listing.pool.data() + off));
    dirs.push_back(std::move(d));
  }
  order_class(dirs, out);
}

}  // namespace

Index index_image_folder(const std::string& root_in) {
  std::string root = root_in;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  const int root_fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) {
    fail("dataset root '{}': {} (expected a directory laid out as root/<class>/<image>)", root,
         errno_text(errno));
  }
  std::vector<std::string> classes;
  Listing top;
  try {
    list_dir(root_fd, root, top);
  } catch (...) {
    close(root_fd);
    throw;
  }
  sort_names(top.pool, top.dirs, nullptr);
  for (uint32_t off : top.dirs) classes.emplace_back(top.pool.data() + off);
  if (classes.empty()) {
    close(root_fd);
    fail("dataset root '{}' has no class directories (expected root/<class>/<image>{})", root,
         top.files.empty() ? "" : "; it holds images directly, which ImageFolder does not accept");
  }

  std::vector<ClassFiles> per_class(classes.size());
  std::exception_ptr error;
  std::mutex error_mu;
  // Listing and stat-ing a cold tree waits on storage more than on the CPU: keep more
  // directories in flight than there are cores (matters most on high-latency storage such
  // as NFS; on local disk, cold, 1.28 M entries: 5.8 s -> 5.1 s, docs/PERFORMANCE.md).
  tbb::global_control io_threads(tbb::global_control::max_allowed_parallelism,
                                 std::max<size_t>(kScanThreads, tbb::info::default_concurrency()));
  // Another component's global_control may hold the limit lower (a live loader in the same
  // process, as a second stoker.Loader has): the lowest active one applies, and an arena
  // asking for more draws TBB's "number of workers is limited" warning. Ask for what is
  // allowed.
  const int allowed =
      int(tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism));
  tbb::task_arena arena(std::max(1, std::min(int(kScanThreads), allowed)));
  arena.execute([&] {
    tbb::parallel_for(size_t{0}, per_class.size(), [&](size_t c) {
      try {
        walk_class(root_fd, root, classes[c], per_class[c]);
      } catch (...) {
        std::lock_guard lock(error_mu);
        if (!error) error = std::current_exception();
      }
    });
  });
  close(root_fd);
  if (error) std::rethrow_exception(error);

  return assemble(root, std::move(classes), per_class);
}

}  // namespace stoker
