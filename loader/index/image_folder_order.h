// SPDX-License-Identifier: Apache-2.0
// torchvision's ImageFolder order, shared by the scanners that list a tree (local
// openat/readdir, NFS through libnfs): a scanner lists directories into Listings, these
// functions sort them and build the Index. No I/O here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loader/index/index.h"

namespace stoker::image_folder {

// One directory's non-hidden entries, names kept in one pool (no per-name heap object).
struct Listing {
  std::vector<char> pool;           // names, NUL-terminated
  std::vector<uint32_t> files;      // offsets of regular files with an image extension
  std::vector<uint64_t> file_size;  // parallel to `files`
  std::vector<uint32_t> dirs;       // offsets of sub-directories
};

// Adds `name` to the pool and returns its offset.
uint32_t push_name(std::vector<char>& pool, const char* name);

// Sorts `offs` (and `sizes` alongside, if given) by the names they point to, byte order.
void sort_names(const std::vector<char>& pool, std::vector<uint32_t>& offs,
                std::vector<uint64_t>* sizes);

// A listed directory of one class, `rel` relative to the dataset root ("cls/sub").
struct ListedDir {
  std::string rel;
  Listing listing;
};

// The samples of one class, paths relative to the dataset root, NUL-terminated.
struct ClassFiles {
  std::vector<char> paths;
  std::vector<uint64_t> sizes;
};

// Appends the files of every directory of one class in torchvision's order:
// sorted(os.walk(class_dir)) visits directories in sorted path order, files are sorted
// within each directory. Sorts `dirs` in place.
void order_class(std::vector<ListedDir>& dirs, ClassFiles& out);

// The Index of `root` from its sorted class names and each class's files (released as
// they are copied, so peak memory stays near one copy).
Index assemble(std::string root, std::vector<std::string> classes,
               std::vector<ClassFiles>& per_class);

}  // namespace stoker::image_folder
