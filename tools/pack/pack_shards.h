// SPDX-License-Identifier: Apache-2.0
// stoker pack: an indexed dataset (ImageFolder tree or list file) into POSIX tar shards
// that WebDataset and GNU tar read as they are (`<key>.<ext>` image, `<key>.cls` label),
// plus a shard index (loader/index/shard_index.h) for reading any sample by offset.
// Not a reader: loader/ reads shards.
#pragma once

#include <cstdint>
#include <string>

namespace stoker {

struct PackConfig {
  std::string data;                   // ImageFolder directory or list file (open_index)
  std::string list;                   // optional list file; its paths are relative to `data`
  std::string out;                    // output directory (created if missing)
  uint64_t shard_size = 256'000'000;  // a shard closes before a sample would pass this
  bool force = false;                 // replace shards already in `out`
  bool progress = true;               // a progress line on stderr
};

struct PackResult {
  size_t samples = 0, shards = 0;
  uint64_t bytes_in = 0;   // image bytes read
  uint64_t bytes_out = 0;  // shard bytes written
  double seconds = 0;
  std::string index_file;
};

// Key of sample `i`: its index zero-padded to 9 digits (more past 10^9), so keys sort in
// dataset order and group a sample's members, as WebDataset expects.
std::string shard_key(uint64_t i);

// Throws stoker::Error naming the unreadable input file or the shard a write failed on.
PackResult pack_shards(const PackConfig& config);

}  // namespace stoker
