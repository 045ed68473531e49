// SPDX-License-Identifier: Apache-2.0
// Datasets at nfs:// URLs, indexed through libnfs (no kernel mount): an ImageFolder tree in
// torchvision's order, or a list file, as index_image_folder / index_list_file do locally.
// The Index's root is then the dataset's URL; its samples are read by the NFS source.
#pragma once

#include <istream>
#include <string>

#include "loader/index/index.h"

namespace stoker {

// A directory URL is indexed as an ImageFolder, a file URL as a list file (paths relative
// to its directory). Throws stoker::Error naming the URL; in builds without libnfs, says so.
Index index_nfs(const std::string& url);

// The samples of a list file read from `in` ("relative/path label" lines), sizes left 0;
// `list_file` names it in errors. Shared by the local and the NFS list readers.
Index parse_list_file(std::istream& in, const std::string& list_file, std::string root);

}  // namespace stoker
