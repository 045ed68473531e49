// SPDX-License-Identifier: Apache-2.0
// The checkpoint walk and batch checks of backend_front.h, shared by the CPU and CUDA
// backends, and Backend's fronts (backend.h), which call them once for every backend.
#include "train/backend_front.h"

#include <string>

#include "common/error.h"
#include "models/shapes.h"

namespace stoker {

std::vector<bool> load_params(const Checkpoint& ckpt, const Network& net, std::string_view source,
                              const ParamAccess& access) {
  check_checkpoint(ckpt, net, source);
  std::vector<bool> momentum(net.params.size(), false);
  std::vector<float> values;
  for (size_t i = 0; i < net.params.size(); ++i) {
    const Param& p = net.params[i];
    const Tensor* t = find_tensor(ckpt, p.name);
    STOKER_CHECK(t != nullptr);  // check_checkpoint found every key
    if (p.dtype == ParamType::i64) {
      copy_values(*t, std::span<int64_t>(access.count(i), 1));
      continue;
    }
    values.resize(size_t(numel(p)));
    copy_values(*t, values);
    access.write(i, ParamPart::value, values);
    if (!p.trainable) continue;
    const Tensor* mom = find_tensor(ckpt, std::string(kMomentumPrefix) + p.name);
    momentum[i] = mom != nullptr;
    if (mom == nullptr) continue;
    copy_values(*mom, values);
    access.write(i, ParamPart::momentum, values);
  }
  return momentum;
}

Checkpoint save_params(const Network& net, const ParamAccess& access) {
  Checkpoint out;
  for (size_t i = 0; i < net.params.size(); ++i) {
    const Param& p = net.params[i];
    if (p.dtype == ParamType::i64)
      out.tensors.push_back(make_i64_tensor(p.name, p.shape, std::span(access.count(i), 1)));
    else
      out.tensors.push_back(make_f32_tensor(p.name, p.shape, access.read(i, ParamPart::value)));
  }
  for (size_t i = 0; i < net.params.size(); ++i) {
    const Param& p = net.params[i];
    if (p.trainable && access.has_momentum(i))
      out.tensors.push_back(make_f32_tensor(std::string(kMomentumPrefix) + p.name, p.shape,
                                            access.read(i, ParamPart::momentum)));
  }
  return out;
}

Checkpoint gradient_params(const Network& net, const ParamAccess& access) {
  Checkpoint out;
  for (size_t i = 0; i < net.params.size(); ++i) {
    const Param& p = net.params[i];
    if (p.trainable)
      out.tensors.push_back(make_f32_tensor(p.name, p.shape, access.read(i, ParamPart::gradient)));
  }
  return out;
}

void check_plan(const Network& net, const BackendConfig& config, std::string_view who) {
  if (config.batch < 1 || config.height < 1 || config.width < 1)
    fail("{}: batch {} and image {}x{} must be positive", who, config.batch, config.height,
         config.width);
  if (net.in_channels != 3)
    fail("{}: {} takes {} input channels; the input conversion handles 3 (RGB)", who, net.name,
         net.in_channels);
  const std::vector<ActShape> shapes = infer_shapes(net, config.height, config.width);
  for (const Layer& l : net.layers) {
    if (l.kind != LayerKind::batchnorm) continue;
    const ActShape& s = shapes[size_t(l.inputs[0])];
    const int64_t per_channel = config.batch * s.h * s.w;
    if (per_channel < 2)
      fail(
          "{}: {}: {} sees {} value per channel at batch {} and {}x{} input; training batch norm "
          "needs more than one (use a larger batch or input)",
          who, net.name, l.name, per_channel, config.batch, config.height, config.width);
  }
}

void check_batch(const HostBatch& batch, const Network& net, int64_t planned) {
  if (batch.count != planned)
    fail("{}: a batch of {} images staged, the backend is planned for {}", net.name, batch.count,
         planned);
  const int64_t classes = net.num_classes;
  for (int64_t n = 0; n < batch.count; ++n)
    if (batch.labels[n] < 0 || batch.labels[n] >= classes)
      fail("{}: label {} of image {} in the batch is outside [0, {})", net.name, batch.labels[n], n,
           classes);
}

Backend::Backend(const BackendCaps& caps, const Network& net, const BackendConfig& config,
                 std::string_view who)
    : caps_(caps), net_(net), planned_(config), who_(who) {
  check_plan(net_, planned_, who_);
}

void Backend::stage(const HostBatch& batch) {
  check_batch(batch, net_, planned_.batch);
  stage_impl(batch);
}

void Backend::reshape(int64_t height, int64_t width) {
  if (height == planned_.height && width == planned_.width) return;
  BackendConfig next = planned_;
  next.height = height;
  next.width = width;
  check_plan(net_, next, who_);
  reshape_impl(height, width);
  planned_ = next;
}

}  // namespace stoker
