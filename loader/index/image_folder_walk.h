// SPDX-License-Identifier: Apache-2.0
// The one ImageFolder walk, over any storage that can list a directory: the root's class
// directories, then each class's tree on several threads (listing waits on storage more than
// on the CPU), ordered by image_folder_order. A scanner supplies only a DirLister: local
// openat/readdir (index_image_folder.cc) or libnfs (index_nfs.cc).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "loader/index/image_folder_order.h"
#include "loader/index/index.h"

namespace stoker::image_folder {

// Lists directories of one dataset tree for one thread.
class DirLister {
 public:
  virtual ~DirLister() = default;
  // The non-hidden entries of `rel` (relative to the dataset root; "" is the root) into
  // `out`: sub-directories, and regular files with an image extension with their sizes.
  // Links are resolved; dangling ones skipped. Throws naming the directory.
  virtual void list(const std::string& rel, Listing& out) = 0;
  // `rel` as messages name it (a path or a URL).
  virtual std::string display(const std::string& rel) const = 0;
};

// The Index of the tree `root` (Index::root; a directory or an nfs:// URL): `root_lister`
// lists the root, then classes are walked in parallel, each thread with its own lister from
// `make_lister`. Throws naming the root when it holds no class directory.
Index walk_image_folder(const std::string& root, DirLister& root_lister,
                        const std::function<std::unique_ptr<DirLister>()>& make_lister);

}  // namespace stoker::image_folder
