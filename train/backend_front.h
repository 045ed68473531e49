// SPDX-License-Identifier: Apache-2.0
// What every backend does the same way around its own memory, written once: the checks of a
// plan's shape and of a staged batch, and the walk of a checkpoint in torch's layout (load, save,
// gradients) over a backend's parameters. A backend supplies the few memory hooks (`ParamAccess`);
// the walk decides which tensors exist and in which order. Not the Backend interface (backend.h),
// whose fronts (its constructor, stage(), reshape()) call the checks here, once, for every
// backend; this library defines them.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "models/network.h"
#include "train/backend.h"
#include "train/checkpoint.h"

namespace stoker {

// Which of a parameter's f32 tensors a hook reads or writes.
enum class ParamPart { value, momentum, gradient };

// A backend's parameters (Network::params index) seen in torch's plain layout.
struct ParamAccess {
  // num_batches_tracked (ParamType::i64): the host count.
  std::function<int64_t*(size_t param)> count;
  // f32 tensors: numel(param) values in, or out. Load writes value and momentum only.
  std::function<void(size_t param, ParamPart part, std::span<const float> values)> write;
  std::function<std::vector<float>(size_t param, ParamPart part)> read;
  // Whether a trainable parameter has a momentum buffer (save writes it only then).
  std::function<bool(size_t param)> has_momentum;
};

// Checks `ckpt` against `net` (check_checkpoint, naming `source`), then writes every
// parameter's value and, where the checkpoint has one, its momentum, parameter by parameter.
// Returns per parameter whether a momentum buffer was loaded (false for the rest).
std::vector<bool> load_params(const Checkpoint& ckpt, const Network& net, std::string_view source,
                              const ParamAccess& access);

// Every parameter under its state_dict key in Network::params order, then the momentum
// buffers ("optim.momentum.<key>") of the trainable ones that have one.
Checkpoint save_params(const Network& net, const ParamAccess& access);

// The trainable parameters' gradients under their state_dict keys.
Checkpoint gradient_params(const Network& net, const ParamAccess& access);

// A plan's shape, before any backend work: stoker::Error, starting with `who`, unless batch,
// height and width are positive, the network takes 3 input channels (the input conversion's
// RGB) and every batch norm sees more than one value per channel in training.
void check_plan(const Network& net, const BackendConfig& config, std::string_view who);

// A batch for stage(): stoker::Error unless it holds `planned` images and every label is in
// [0, net.num_classes), naming the network, the image and the label.
void check_batch(const HostBatch& batch, const Network& net, int64_t planned);

}  // namespace stoker
