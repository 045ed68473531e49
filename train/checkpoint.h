// SPDX-License-Identifier: Apache-2.0
// A Stoker checkpoint is one safetensors file (train/safetensors.h): the model under
// torchvision's state_dict keys (F32; num_batches_tracked I64, as torch stores it), SGD
// momentum buffers under "optim.momentum.<key>", and the run state as metadata strings. It
// moves to PyTorch by dropping the "optim." keys. Saving is atomic; it does not train.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "models/network.h"
#include "train/safetensors.h"

namespace stoker {

// The tensors (model first, in state_dict order, then optimizer state) and the metadata.
using Checkpoint = TensorFile;

inline constexpr std::string_view kMomentumPrefix = "optim.momentum.";

// Where a run is: enough to resume it with the same batches (the sampler is resumable from
// (epoch, position), its order a pure function of the seed).
struct RunState {
  int64_t epoch = 0;
  int64_t step = 0;              // optimizer steps taken since the run began
  int64_t sampler_position = 0;  // samples of `epoch` already consumed
  uint64_t seed = 0;
  std::string config = "{}";  // the run's configuration, as a JSON document
};

// Metadata keys "epoch", "step", "sampler_position", "seed", "config" (and "format").
void set_run_state(Checkpoint& ckpt, const RunState& state);
// stoker::Error naming `path` and the key when one is missing or not what it should be.
RunState get_run_state(const Checkpoint& ckpt, std::string_view path);

// Tensors from plain values; the shape's element count must equal values.size().
Tensor make_f32_tensor(std::string name, std::vector<int64_t> shape, std::span<const float> values);
Tensor make_i64_tensor(std::string name, std::vector<int64_t> shape,
                       std::span<const int64_t> values);
// Copies a tensor's values out; its dtype and element count must match (STOKER_CHECK: call
// check_checkpoint first for tensors that came from a file).
void copy_values(const Tensor& t, std::span<float> out);
void copy_values(const Tensor& t, std::span<int64_t> out);

// nullptr when absent.
const Tensor* find_tensor(const Checkpoint& ckpt, std::string_view name);

// The model's initial state (models/init.h), one tensor per Param in state_dict order.
Checkpoint init_checkpoint(const Network& net, uint64_t seed);

// A zero momentum buffer "optim.momentum.<key>" for each trainable parameter.
void add_zero_momentum(Checkpoint& ckpt, const Network& net);

// Checks that the checkpoint holds exactly `net`'s state_dict: every key present with its
// shape and dtype, and nothing else but momentum buffers of trainable parameters with their
// parameter's shape. stoker::Error naming `path`, the count of problems and each offending
// key (missing, extra, wrong shape or dtype) otherwise.
void check_checkpoint(const Checkpoint& ckpt, const Network& net, std::string_view path);

// Writes `path` atomically: `path.tmp.<pid>` in the same directory, fsync, rename over `path`,
// fsync the directory. On any failure (missing or non-directory parent, a full disk, a file
// too large) a stoker::Error names the path and the errno text, the temporary file is
// removed and a previous file at `path` is left untouched.
void save_checkpoint(const std::string& path, const Checkpoint& ckpt);

// read_safetensors: every field validated, errors name the file and the tensor.
Checkpoint load_checkpoint(const std::string& path);

}  // namespace stoker
