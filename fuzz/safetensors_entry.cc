// SPDX-License-Identifier: Apache-2.0
// The safetensors entry point (fuzz/fuzz_entry.h): an accepted file must re-encode to a file
// that reads back identical, so the reader and the writer agree on every field.
#include "fuzz/fuzz_entry.h"

#include <string>

#include "common/error.h"
#include "train/safetensors.h"

namespace stoker::fuzz {

void safetensors(std::span<const uint8_t> data) {
  const TensorFile file = parse_safetensors(data, "fuzz.safetensors");
  std::string again = encode_safetensors_header(file);
  for (const Tensor& t : file.tensors) {
    STOKER_CHECK(t.bytes.size() ==
                 static_cast<uint64_t>(shape_numel(t.shape)) * dtype_size(t.dtype));
    again.append(t.bytes.begin(), t.bytes.end());
  }
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(again.data()),
                                       again.size());
  const TensorFile round = parse_safetensors(bytes, "fuzz.safetensors (re-encoded)");
  STOKER_CHECK(round.metadata == file.metadata && round.tensors.size() == file.tensors.size());
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    const Tensor &a = file.tensors[i], &b = round.tensors[i];
    STOKER_CHECK_MSG(
        a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.bytes == b.bytes,
        "tensor '{}'", a.name);
  }
}

}  // namespace stoker::fuzz
