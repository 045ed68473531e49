// SPDX-License-Identifier: Apache-2.0
// `stoker gen`: deterministic synthetic ImageNet-like datasets in ImageFolder layout.
// Two contents: photo-like (texture, edges, colour; class-dependent, so a network can learn
// it) and index (a flat colour that encodes the sample's index, so tests can check order).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stoker {

enum class GenPattern { photo, index };

struct GenConfig {
  std::string out;                 // a single size: out/<class>/<file>.jpg;
                                   // several: out/<size>px/<class>/<file>.jpg
  std::vector<int> sizes = {256};  // about this many pixels a side: w*h ~= size^2
  int classes = 10;
  int per_class = 50;
  double aspect_lo = 3.0 / 4.0, aspect_hi = 4.0 / 3.0;  // width / height spread
  int quality = 90;
  uint64_t seed = 1;
  GenPattern pattern = GenPattern::photo;
  bool progress = true;
  // Write into a root that holds something else (another configuration's dataset, or files
  // gen did not write) instead of refusing: files gen does not write stay.
  bool force = false;
};

struct GenResult {
  std::vector<std::string> roots;  // one dataset root per size
  uint64_t images = 0, bytes = 0;
};

// Writes the dataset(s). A root that already holds a finished dataset made with the same
// configuration (stoker-gen.json) is kept as it is; one left unfinished by the same
// configuration (stoker-gen.partial.json) is completed. A root holding anything else is
// refused (stoker::UsageError naming it and the difference) unless config.force. Throws
// stoker::Error on I/O failure.
GenResult generate_dataset(const GenConfig& config);

// The colour that encodes `index` in the index pattern (4 bits per channel, mid-bucket).
void index_colour(uint32_t index, uint8_t rgb[3]);
// Inverse of index_colour, tolerant to JPEG and resampling error (+-7 per channel).
uint32_t index_from_colour(const uint8_t rgb[3]);

}  // namespace stoker
