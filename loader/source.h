// SPDX-License-Identifier: Apache-2.0
// The bytes of a sample: buffered pread of the whole file into a reused buffer. The size is
// taken from fstat at open, not from the index, so a file that changed since indexing is
// read as it is now. Also the cold-cache switch: evict files from the page cache.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace stoker {

struct Index;

// Reads all of `path` into buf (grown, never shrunk). Returns the bytes read. With `evict`,
// drops the file from the page cache afterwards, so the next epoch reads storage again.
// Throws stoker::Error naming the file and the reason.
std::span<const uint8_t> read_file(const std::string& path, std::vector<uint8_t>& buf,
                                   bool evict = false);

// posix_fadvise(DONTNEED) on every file of the index, so the next read comes from storage.
// Returns the number of files that could not be evicted (missing, unreadable).
size_t evict_from_page_cache(const Index& index);

}  // namespace stoker
