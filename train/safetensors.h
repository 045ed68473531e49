// SPDX-License-Identifier: Apache-2.0
// The safetensors format (Hugging Face's): an 8-byte little-endian header length, a JSON
// header mapping each tensor's name to {dtype, shape, data_offsets [begin, end)} plus an
// optional "__metadata__" object of strings, then the raw little-endian tensor bytes. Plain
// encode and validating decode only; where and how a file is written is train/checkpoint.h.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace stoker {

// The dtypes the format names. Stoker itself writes F32 and I64 (torch's float32 and the
// int64 num_batches_tracked); the others are known so that any valid file can be read.
enum class TensorDType { boolean, u8, i8, u16, i16, f16, bf16, u32, i32, f32, u64, i64, f64 };

std::string_view dtype_name(TensorDType dtype);  // "F32", as the header spells it
size_t dtype_size(TensorDType dtype);            // bytes per element
// "F32" -> f32; false for a name the format does not define.
bool parse_dtype(std::string_view name, TensorDType* out);

struct Tensor {
  std::string name;  // e.g. "layer1.0.conv1.weight"
  TensorDType dtype = TensorDType::f32;
  std::vector<int64_t> shape;  // empty for a scalar (one element)
  std::vector<uint8_t> bytes;  // numel x dtype_size, little-endian, row-major
};

// What one file holds: the tensors in file order (by data offset) and the metadata.
struct TensorFile {
  std::vector<Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Element count of a shape; -1 when a dimension is negative or the product overflows.
int64_t shape_numel(std::span<const int64_t> shape);

// The header block: 8-byte length, then the JSON padded with spaces so that the tensor data
// starts 8-byte aligned. Tensors are laid out back to back in `file.tensors` order. Names must
// be unique and each tensor's byte count must match its shape (STOKER_CHECK: a caller's bug).
std::string encode_safetensors_header(const TensorFile& file);

// Reads and validates a whole file. Every problem is a stoker::Error naming `path`, what was
// expected and what was found, and the tensor where there is one: a missing or truncated
// file, a header that is not JSON, an unknown dtype, a negative dimension, shape x element
// size != byte length, offsets outside the data, overlapping or unreferenced bytes, a
// duplicate name, non-string metadata.
TensorFile read_safetensors(const std::string& path);

// The same reader over a whole file already in memory; `name` stands for the path in errors.
TensorFile parse_safetensors(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace stoker
