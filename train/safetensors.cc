// SPDX-License-Identifier: Apache-2.0
// Encodes the safetensors header and reads whole files back, validating every field before a
// byte of tensor data is trusted: a checkpoint that loads is one whose every tensor is whole.
#include "train/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <set>

#include "common/error.h"

namespace stoker {

// Tensor bytes are stored as they lie in memory; the format is little-endian.
static_assert(std::endian::native == std::endian::little, "safetensors needs a little-endian host");

namespace {

struct DTypeInfo {
  TensorDType dtype;
  std::string_view name;
  size_t size;
};

constexpr std::array<DTypeInfo, 13> kDTypes = {{
    {TensorDType::boolean, "BOOL", 1},
    {TensorDType::u8, "U8", 1},
    {TensorDType::i8, "I8", 1},
    {TensorDType::u16, "U16", 2},
    {TensorDType::i16, "I16", 2},
    {TensorDType::f16, "F16", 2},
    {TensorDType::bf16, "BF16", 2},
    {TensorDType::u32, "U32", 4},
    {TensorDType::i32, "I32", 4},
    {TensorDType::f32, "F32", 4},
    {TensorDType::u64, "U64", 8},
    {TensorDType::i64, "I64", 8},
    {TensorDType::f64, "F64", 8},
}};

const DTypeInfo& info(TensorDType dtype) {
  for (const DTypeInfo& d : kDTypes) {
    if (d.dtype == dtype) return d;
  }
  STOKER_CHECK_MSG(false, "dtype {} has no entry", static_cast<int>(dtype));
  return kDTypes[0];
}

// The reference implementation refuses larger headers; so do we, before allocating one.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
constexpr std::string_view kMetadataKey = "__metadata__";
// A valid header nests three deep (header, tensor, shape). nlohmann's dump() recurses once
// per level, and error messages dump what they found: a shape of 100,000 nested arrays
// would overflow the stack while describing itself.
constexpr int kMaxJsonDepth = 16;

std::string known_dtypes() {
  std::string s;
  for (const DTypeInfo& d : kDTypes) s += (s.empty() ? "" : ", ") + std::string(d.name);
  return s;
}

// Where one tensor's bytes lie in the data section (the bytes after the header block).
struct TensorSpan {
  std::string name;
  TensorDType dtype = TensorDType::f32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // [begin, end)
  uint64_t end = 0;
};

// nlohmann keeps the last of duplicate keys silently; a duplicate tensor name would make
// one tensor vanish, so every object's keys are watched while parsing.
nlohmann::json parse_json(std::string_view path, std::string_view text) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::string duplicate;
  auto watch = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (depth > kMaxJsonDepth) {
      fail("{}: the safetensors header nests JSON more than {} levels deep; expected 3", path,
           kMaxJsonDepth);
    }
    if (event == E::object_start) keys.emplace_back();
    if (event == E::object_end && !keys.empty()) keys.pop_back();
    if (event == E::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second &&
        duplicate.empty()) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, watch);
  } catch (const nlohmann::json::exception& e) {
    fail(
        "{}: the safetensors header is not valid JSON ({}); the file is corrupt or not a "
        "safetensors file",
        path, e.what());
  }
  if (!duplicate.empty()) {
    fail("{}: the safetensors header names '{}' twice; expected unique names", path, duplicate);
  }
  return header;
}

std::map<std::string, std::string> parse_metadata(std::string_view path, const nlohmann::json& j) {
  if (!j.is_object()) {
    fail("{}: \"__metadata__\" is a JSON {}; expected an object of strings", path, j.type_name());
  }
  std::map<std::string, std::string> metadata;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string()) {
      fail("{}: metadata '{}' is a JSON {}; safetensors metadata values must be strings", path, key,
           value.type_name());
    }
    metadata[key] = value.get<std::string>();
  }
  return metadata;
}

TensorSpan parse_entry(std::string_view path, const std::string& name, const nlohmann::json& j,
                       uint64_t data_size) {
  if (!j.is_object()) {
    fail("{}: tensor '{}' is a JSON {}; expected an object with dtype, shape and data_offsets",
         path, name, j.type_name());
  }
  for (const auto& [field, value] : j.items()) {
    if (field != "dtype" && field != "shape" && field != "data_offsets") {
      fail(
          "{}: tensor '{}' has an unknown field '{}'; expected only dtype, shape and "
          "data_offsets",
          path, name, field);
    }
  }
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!j.contains(field)) fail("{}: tensor '{}' has no '{}' field", path, name, field);
  }
  TensorSpan span;
  span.name = name;
  const nlohmann::json& dtype = j["dtype"];
  if (!dtype.is_string() || !parse_dtype(dtype.get<std::string>(), &span.dtype)) {
    fail("{}: tensor '{}' has dtype {}; expected one of {}", path, name, dtype.dump(),
         known_dtypes());
  }
  const nlohmann::json& shape = j["shape"];
  if (!shape.is_array()) {
    fail("{}: tensor '{}' has shape {}; expected an array of dimensions", path, name, shape.dump());
  }
  for (const nlohmann::json& d : shape) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      fail("{}: tensor '{}' has shape {}; expected non-negative integer dimensions", path, name,
           shape.dump());
    }
    span.shape.push_back(d.get<int64_t>());
  }
  const nlohmann::json& offsets = j["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned() || offsets[0].get<uint64_t>() > offsets[1].get<uint64_t>()) {
    fail("{}: tensor '{}' has data_offsets {}; expected [begin, end] with 0 <= begin <= end", path,
         name, offsets.dump());
  }
  span.begin = offsets[0].get<uint64_t>();
  span.end = offsets[1].get<uint64_t>();
  const int64_t n = shape_numel(span.shape);
  uint64_t expected = 0;
  if (n < 0 ||
      __builtin_mul_overflow(static_cast<uint64_t>(n), dtype_size(span.dtype), &expected)) {
    fail("{}: tensor '{}' has shape {}, whose size overflows 64 bits", path, name, shape.dump());
  }
  if (span.end - span.begin != expected) {
    fail("{}: tensor '{}' is {} {} x {} bytes = {} bytes, but its data_offsets {} span {} bytes",
         path, name, dtype_name(span.dtype), shape.dump(), dtype_size(span.dtype), expected,
         offsets.dump(), span.end - span.begin);
  }
  if (span.end > data_size) {
    fail(
        "{}: tensor '{}' has data_offsets {} but the data section is only {} bytes (truncated "
        "file?)",
        path, name, offsets.dump(), data_size);
  }
  return span;
}

// Tensors must tile the data section exactly, as the reference implementation requires: an
// overlap means two tensors share bytes, a hole or a tail means bytes nobody accounts for.
void check_layout(std::string_view path, std::vector<TensorSpan>& spans, uint64_t data_size) {
  std::sort(spans.begin(), spans.end(), [](const TensorSpan& a, const TensorSpan& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t at = 0;
  const TensorSpan* previous = nullptr;
  for (const TensorSpan& s : spans) {
    if (s.begin < at) {
      fail("{}: tensor '{}' (bytes [{}, {})) overlaps tensor '{}' (bytes [{}, {}))", path, s.name,
           s.begin, s.end, previous->name, previous->begin, previous->end);
    }
    if (s.begin > at) {
      fail(
          "{}: data bytes [{}, {}) before tensor '{}' belong to no tensor; expected the "
          "tensors to be laid out back to back",
          path, at, s.begin, s.name);
    }
    at = s.end;
    previous = &s;
  }
  if (at != data_size) {
    fail(
        "{}: the data section is {} bytes but its tensors cover only {}; expected no trailing "
        "bytes",
        path, data_size, at);
  }
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

void pread_all(const std::string& path, int fd, uint8_t* out, uint64_t size, uint64_t offset,
               std::string_view what) {
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("{}: cannot read {}: {}", path, what, errno_text(errno));
    if (n == 0) {
      fail("{}: {} ends at byte {} of {}; the file is shorter than when it was opened", path, what,
           offset + done, offset + size);
    }
    done += static_cast<uint64_t>(n);
  }
}

}  // namespace

std::string_view dtype_name(TensorDType dtype) {
  return info(dtype).name;
}
size_t dtype_size(TensorDType dtype) {
  return info(dtype).size;
}

bool parse_dtype(std::string_view name, TensorDType* out) {
  for (const DTypeInfo& d : kDTypes) {
    if (d.name == name) {
      *out = d.dtype;
      return true;
    }
  }
  return false;
}

int64_t shape_numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (const int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

std::string encode_safetensors_header(const TensorFile& file) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!file.metadata.empty()) header[std::string(kMetadataKey)] = file.metadata;
  uint64_t offset = 0;
  for (const Tensor& t : file.tensors) {
    STOKER_CHECK_MSG(t.name != kMetadataKey && !header.contains(t.name), "tensor name '{}'",
                     t.name);
    const int64_t n = shape_numel(t.shape);
    STOKER_CHECK_MSG(n >= 0 && static_cast<uint64_t>(n) * dtype_size(t.dtype) == t.bytes.size(),
                     "tensor '{}': {} bytes for its shape", t.name, t.bytes.size());
    header[t.name] = {{"dtype", dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string json;
  try {
    json = header.dump();
  } catch (const nlohmann::json::exception& e) {
    fail("safetensors header: a tensor name or metadata string is not valid UTF-8 ({})", e.what());
  }
  // Spaces after the JSON are allowed by the format; they align the data to 8 bytes.
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string block(8, '\0');
  for (int i = 0; i < 8; ++i) block[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  return block + json;
}

namespace {

// The reader proper, over any byte source: `read_at(out, size, offset, what)` fills `out`
// with `size` bytes from `offset` of the file (which is `file_size` bytes long) or throws.
template <class ReadAt>
TensorFile decode_safetensors(const std::string& path, uint64_t file_size, ReadAt read_at) {
  if (file_size < 8) {
    fail("{}: the file is {} bytes; a safetensors file starts with an 8-byte header length", path,
         file_size);
  }
  std::array<uint8_t, 8> length_bytes{};
  read_at(length_bytes.data(), 8, 0, "the header length");
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= static_cast<uint64_t>(length_bytes[i]) << (8 * i);
  if (header_size > file_size - 8) {
    fail(
        "{}: the header length says {} bytes but only {} follow; the file is truncated or not "
        "a safetensors file",
        path, header_size, file_size - 8);
  }
  if (header_size > kMaxHeaderBytes) {
    fail("{}: the header is {} bytes; expected at most {} (not a safetensors file?)", path,
         header_size, kMaxHeaderBytes);
  }
  std::string text(header_size, '\0');
  read_at(reinterpret_cast<uint8_t*>(text.data()), header_size, 8, "the header");
  const nlohmann::json header = parse_json(path, text);
  if (!header.is_object()) {
    fail("{}: the safetensors header is a JSON {}; expected an object of tensors", path,
         header.type_name());
  }

  const uint64_t data_start = 8 + header_size;
  const uint64_t data_size = file_size - data_start;
  TensorFile file;
  std::vector<TensorSpan> spans;
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey) {
      file.metadata = parse_metadata(path, value);
    } else {
      spans.push_back(parse_entry(path, key, value, data_size));
    }
  }
  check_layout(path, spans, data_size);

  file.tensors.reserve(spans.size());
  for (TensorSpan& s : spans) {
    Tensor t;
    t.name = std::move(s.name);
    t.dtype = s.dtype;
    t.shape = std::move(s.shape);
    t.bytes.resize(s.end - s.begin);
    read_at(t.bytes.data(), t.bytes.size(), data_start + s.begin, "tensor '" + t.name + "'");
    file.tensors.push_back(std::move(t));
  }
  return file;
}

}  // namespace

TensorFile read_safetensors(const std::string& path) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) fail("{}: cannot open the safetensors file: {}", path, errno_text(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail("{}: cannot stat: {}", path, errno_text(errno));
  if (!S_ISREG(st.st_mode)) fail("{}: expected a regular file (a safetensors file)", path);
  return decode_safetensors(
      path, static_cast<uint64_t>(st.st_size),
      [&](uint8_t* out, uint64_t size, uint64_t offset, std::string_view what) {
        pread_all(path, fd.get(), out, size, offset, what);
      });
}

TensorFile parse_safetensors(std::span<const uint8_t> bytes, const std::string& name) {
  return decode_safetensors(
      name, bytes.size(), [&](uint8_t* out, uint64_t size, uint64_t offset, std::string_view) {
        // decode_safetensors reads only inside file_size: offsets are checked before use.
        STOKER_CHECK(offset <= bytes.size() && size <= bytes.size() - offset);
        std::copy_n(bytes.begin() + static_cast<ptrdiff_t>(offset), size, out);
      });
}

}  // namespace stoker
