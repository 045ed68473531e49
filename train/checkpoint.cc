// SPDX-License-Identifier: Apache-2.0
// Checkpoint layout (keys, run state), the check against a network description, and the
// atomic save: a crash or a full disk at any point leaves either the old file or the new one.
#include "train/checkpoint.h"

#include <fcntl.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "models/init.h"

namespace stoker {

namespace {

constexpr std::string_view kFormat = "stoker-checkpoint/1";

TensorDType tensor_dtype(ParamType dtype) {
  return dtype == ParamType::i64 ? TensorDType::i64 : TensorDType::f32;
}

template <class T>
Tensor make_tensor(std::string name, std::vector<int64_t> shape, std::span<const T> values,
                   TensorDType dtype) {
  STOKER_CHECK_MSG(shape_numel(shape) == static_cast<int64_t>(values.size()),
                   "tensor '{}': {} values for shape {}", name, values.size(), shape);
  Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes.resize(values.size_bytes());
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), values.size_bytes());
  return t;
}

template <class T>
void copy_out(const Tensor& t, std::span<T> out, TensorDType dtype) {
  STOKER_CHECK_MSG(t.dtype == dtype && t.bytes.size() == out.size_bytes(),
                   "tensor '{}' is {} of {} bytes, read as {} of {} bytes", t.name,
                   dtype_name(t.dtype), t.bytes.size(), dtype_name(dtype), out.size_bytes());
  if (!out.empty()) std::memcpy(out.data(), t.bytes.data(), out.size_bytes());
}

template <class T>
T parse_number(const Checkpoint& ckpt, std::string_view path, const std::string& key) {
  const auto it = ckpt.metadata.find(key);
  if (it == ckpt.metadata.end()) {
    fail(
        "{}: metadata '{}' is missing; expected the run state of a Stoker checkpoint (a file "
        "written by PyTorch holds only the model)",
        path, key);
  }
  const std::string& s = it->second;
  T v{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0) {
    fail("{}: metadata '{}' is '{}'; expected a non-negative integer", path, key, s);
  }
  return v;
}

std::string describe(TensorDType dtype, const std::vector<int64_t>& shape) {
  return fmt::format("{} {}", dtype_name(dtype), shape);
}

// Writes everything or returns the errno of the failing write (EFBIG, ENOSPC, EIO...).
int write_all(int fd, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;  // not expected from a regular file; never loop forever
    p += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

// The file's bytes into `fd`; 0 or the errno of the first failure.
int write_file(int fd, const std::string& header, const Checkpoint& ckpt) {
  if (const int err = write_all(fd, header.data(), header.size())) return err;
  for (const Tensor& t : ckpt.tensors) {
    if (const int err = write_all(fd, t.bytes.data(), t.bytes.size())) return err;
  }
  if (::fsync(fd) != 0) return errno;
  return 0;
}

void fsync_directory(const std::string& path, const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int err = fd < 0 || ::fsync(fd) != 0 ? errno : 0;
  if (fd >= 0) ::close(fd);
  if (err != 0) {
    // The rename has happened: the new checkpoint is in place but may not survive a crash.
    fail(
        "{}: written, but syncing its directory {} failed: {}; the rename may be lost on a "
        "crash",
        path, dir, errno_text(err));
  }
}

}  // namespace

void set_run_state(Checkpoint& ckpt, const RunState& state) {
  STOKER_CHECK(state.epoch >= 0 && state.step >= 0 && state.sampler_position >= 0);
  ckpt.metadata["format"] = kFormat;
  ckpt.metadata["epoch"] = std::to_string(state.epoch);
  ckpt.metadata["step"] = std::to_string(state.step);
  ckpt.metadata["sampler_position"] = std::to_string(state.sampler_position);
  ckpt.metadata["seed"] = std::to_string(state.seed);
  ckpt.metadata["config"] = state.config;
}

RunState get_run_state(const Checkpoint& ckpt, std::string_view path) {
  RunState state;
  state.epoch = parse_number<int64_t>(ckpt, path, "epoch");
  state.step = parse_number<int64_t>(ckpt, path, "step");
  state.sampler_position = parse_number<int64_t>(ckpt, path, "sampler_position");
  state.seed = parse_number<uint64_t>(ckpt, path, "seed");
  const auto it = ckpt.metadata.find("config");
  if (it == ckpt.metadata.end()) fail("{}: metadata 'config' is missing", path);
  if (!nlohmann::json::accept(it->second)) {
    fail("{}: metadata 'config' is not a JSON document: '{}'", path, it->second);
  }
  state.config = it->second;
  return state;
}

Tensor make_f32_tensor(std::string name, std::vector<int64_t> shape,
                       std::span<const float> values) {
  return make_tensor(std::move(name), std::move(shape), values, TensorDType::f32);
}

Tensor make_i64_tensor(std::string name, std::vector<int64_t> shape,
                       std::span<const int64_t> values) {
  return make_tensor(std::move(name), std::move(shape), values, TensorDType::i64);
}

void copy_values(const Tensor& t, std::span<float> out) {
  copy_out(t, out, TensorDType::f32);
}
void copy_values(const Tensor& t, std::span<int64_t> out) {
  copy_out(t, out, TensorDType::i64);
}

const Tensor* find_tensor(const Checkpoint& ckpt, std::string_view name) {
  for (const Tensor& t : ckpt.tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Checkpoint init_checkpoint(const Network& net, uint64_t seed) {
  Checkpoint ckpt;
  ckpt.tensors.reserve(net.params.size());
  for (size_t i = 0; i < net.params.size(); ++i) {
    const Param& p = net.params[i];
    const auto n = static_cast<size_t>(numel(p));
    if (p.dtype == ParamType::i64) {
      std::vector<int64_t> values(n);
      init_param(net, i, seed, std::span<int64_t>(values));
      ckpt.tensors.push_back(make_i64_tensor(p.name, p.shape, values));
    } else {
      std::vector<float> values(n);
      init_param(net, i, seed, std::span<float>(values));
      ckpt.tensors.push_back(make_f32_tensor(p.name, p.shape, values));
    }
  }
  return ckpt;
}

void add_zero_momentum(Checkpoint& ckpt, const Network& net) {
  for (const Param& p : net.params) {
    if (!p.trainable) continue;
    const std::vector<float> zeros(static_cast<size_t>(numel(p)), 0.0f);
    ckpt.tensors.push_back(make_f32_tensor(std::string(kMomentumPrefix) + p.name, p.shape, zeros));
  }
}

void check_checkpoint(const Checkpoint& ckpt, const Network& net, std::string_view path) {
  std::unordered_map<std::string_view, const Tensor*> by_name;
  for (const Tensor& t : ckpt.tensors) by_name.emplace(t.name, &t);
  std::vector<std::string> problems;
  auto expect = [&](const Tensor& t, const Param& p) {
    const TensorDType dtype = tensor_dtype(p.dtype);
    if (t.dtype != dtype || t.shape != p.shape) {
      problems.push_back(fmt::format("'{}' is {}; expected {}", t.name, describe(t.dtype, t.shape),
                                     describe(dtype, p.shape)));
    }
  };
  for (const Param& p : net.params) {
    const auto it = by_name.find(p.name);
    if (it == by_name.end()) {
      problems.push_back(
          fmt::format("missing '{}' ({})", p.name, describe(tensor_dtype(p.dtype), p.shape)));
    } else {
      expect(*it->second, p);
    }
  }
  for (const Tensor& t : ckpt.tensors) {
    if (param_index(net, t.name) >= 0) continue;
    if (t.name.starts_with(kMomentumPrefix)) {
      const int i = param_index(net, std::string_view(t.name).substr(kMomentumPrefix.size()));
      if (i >= 0 && net.params[i].trainable) {
        Param momentum = net.params[i];
        momentum.name = t.name;
        momentum.dtype = ParamType::f32;
        expect(t, momentum);
        continue;
      }
      problems.push_back(
          fmt::format("extra '{}': momentum of no trainable parameter of {}", t.name, net.name));
      continue;
    }
    problems.push_back(fmt::format("extra '{}' ({}): not in {}'s state_dict", t.name,
                                   describe(t.dtype, t.shape), net.name));
  }
  if (problems.empty()) return;
  constexpr size_t kShown = 10;
  std::string list;
  for (size_t i = 0; i < problems.size() && i < kShown; ++i) list += "\n  " + problems[i];
  if (problems.size() > kShown)
    list += fmt::format("\n  ... and {} more", problems.size() - kShown);
  fail("{}: does not hold {} with {} classes ({} state_dict entries); {} problem{}:{}", path,
       net.name, net.num_classes, net.params.size(), problems.size(),
       problems.size() == 1 ? "" : "s", list);
}

void save_checkpoint(const std::string& path, const Checkpoint& ckpt) {
  std::string header;
  try {
    header = encode_safetensors_header(ckpt);
  } catch (const Error& e) {
    fail("{}: {}", path, e.what());
  }
  size_t total = header.size();
  for (const Tensor& t : ckpt.tensors) total += t.bytes.size();
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  // A stale temporary of the same pid can only be from a dead process: truncate it.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    fail(
        "{}: cannot create the checkpoint's temporary file {}: {}; expected an existing, "
        "writable directory {}",
        path, tmp, errno_text(errno), dir);
  }
  int err = write_file(fd, header, ckpt);
  if (::close(fd) != 0 && err == 0) err = errno;  // NFS reports some write errors here
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    fail(
        "{}: cannot write the checkpoint ({} bytes, through {}): {}; a previous checkpoint "
        "there is left untouched",
        path, total, tmp, errno_text(err));
  }
  fsync_directory(path, dir);
}

Checkpoint load_checkpoint(const std::string& path) {
  return read_safetensors(path);
}

}  // namespace stoker
