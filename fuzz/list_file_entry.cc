// SPDX-License-Identifier: Apache-2.0
// The list-file entry point (fuzz/fuzz_entry.h): parses from memory through the same
// function the local and NFS list readers use, then checks the Index it built.
#include "fuzz/fuzz_entry.h"

#include <algorithm>
#include <sstream>
#include <string>

#include "common/error.h"
#include "loader/index/index.h"
#include "loader/index/index_nfs.h"

namespace stoker::fuzz {

void list_file(std::span<const uint8_t> data) {
  std::istringstream in(std::string(data.begin(), data.end()));
  const Index index = parse_list_file(in, "fuzz.txt", "/data");
  STOKER_CHECK(index.size() > 0 && index.name_offset.size() == index.size());
  STOKER_CHECK(index.bytes.size() == index.size() && !index.sharded());
  uint32_t max_label = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    const uint64_t end = i + 1 < index.size() ? index.name_offset[i + 1] : index.names.size();
    // The pool is NUL-separated: a path with a NUL inside would be read back cut short.
    STOKER_CHECK_MSG(index.relative_path(i).size() + 1 == end - index.name_offset[i],
                     "sample {} '{}'", i, index.relative_path(i));
    STOKER_CHECK(!index.relative_path(i).empty());
    max_label = std::max(max_label, index.label[i]);
  }
  STOKER_CHECK(index.classes.size() == size_t{max_label} + 1);
}

}  // namespace stoker::fuzz
