// SPDX-License-Identifier: Apache-2.0
// The fuzzers' entry points, one per parser of untrusted bytes. Each runs one input the way
// Stoker itself would and checks what comes back: it returns when the input is accepted,
// throws stoker::Error when it is refused, and aborts (STOKER_CHECK) on a broken invariant.
// fuzz/*_fuzz.cc call them from libFuzzer, tests/fuzz/replay_test.cc on the saved inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace stoker::fuzz {

// Image inputs start with this many bytes that choose the decode options, the crop region
// and the output size (layout in image_decode_entry.cc); the image bytes follow.
inline constexpr size_t kImagePrefixBytes = 11;
// The pixel limit the image entry decodes under: small, so one input stays fast, and a
// header that gets past it unchecked shows up as a large allocation.
inline constexpr uint64_t kImageMaxPixels = uint64_t{1} << 22;

// Sniff, open, decode a region (DCT-scaled and cropped as asked), resize it: the worker's path.
void image_decode(std::span<const uint8_t> data);
// The list-file parser ("relative/path label" lines), from memory.
void list_file(std::span<const uint8_t> data);
// The safetensors reader, from memory; an accepted file must survive an encode round trip.
void safetensors(std::span<const uint8_t> data);

}  // namespace stoker::fuzz
