// SPDX-License-Identifier: Apache-2.0
// The reference network: one loop over the layers forward, one backward, each layer a call
// to its naive kernel. Gradients of activations are zeroed, then every consumer ADDS its
// input gradient (the kernels overwrite, into scratch): a block's input feeds both the
// residual branch and the shortcut, so its gradient is the sum of the two.
#include "train/reference/network.h"

#include <algorithm>

#include "common/error.h"
#include "train/reference/activation.h"
#include "train/reference/batchnorm.h"
#include "train/reference/conv.h"
#include "train/reference/linear.h"
#include "train/reference/loss.h"
#include "train/reference/pool.h"

namespace stoker::ref {
namespace {

int64_t tensor_size(const ReferenceNet& r, int id) {
  return r.batch * r.shapes[size_t(id)].elements();
}

ConvShape conv_shape(const ReferenceNet& r, const Layer& l) {
  STOKER_CHECK(l.groups == 1 && !l.bias);  // the reference conv has neither
  const ActShape& in = r.shapes[size_t(l.inputs[0])];
  return {r.batch, in.c, in.h, in.w, l.out_channels, l.kernel, l.kernel, l.stride, l.padding};
}

BatchNormShape batchnorm_shape(const ReferenceNet& r, const Layer& l) {
  const ActShape& in = r.shapes[size_t(l.inputs[0])];
  return {r.batch, in.c, in.h, in.w, float(l.eps), float(l.momentum)};
}

PoolShape pool_shape(const ReferenceNet& r, const Layer& l) {
  const ActShape& in = r.shapes[size_t(l.inputs[0])];
  return {r.batch, in.c, in.h, in.w, l.kernel, l.stride, l.padding};
}

float* param(ReferenceNet& r, int index) {
  return r.params[size_t(index)].data();
}
float* grad(ReferenceNet& r, int index) {
  return r.grads[size_t(index)].data();
}

void forward(ReferenceNet& r, const float* images, bool train) {
  std::copy_n(images, tensor_size(r, 0), r.acts[0].begin());
  for (size_t i = 0; i < r.net.layers.size(); ++i) {
    const Layer& l = r.net.layers[i];
    const float* in = r.acts[size_t(l.inputs[0])].data();
    float* out = r.acts[size_t(l.output)].data();
    const ActShape& s = r.shapes[size_t(l.inputs[0])];
    switch (l.kind) {
      case LayerKind::conv:
        conv2d_forward(out, in, param(r, l.weight), conv_shape(r, l));
        break;
      case LayerKind::batchnorm:
        if (train) {
          batchnorm_forward_train(out, r.bn_mean[i].data(), r.bn_rstd[i].data(),
                                  param(r, l.running_mean), param(r, l.running_var), in,
                                  param(r, l.weight), param(r, l.bias_param),
                                  batchnorm_shape(r, l));
          if (l.num_batches_tracked >= 0) r.counts[size_t(l.num_batches_tracked)][0] += 1;
        } else {
          batchnorm_forward_infer(out, in, param(r, l.weight), param(r, l.bias_param),
                                  param(r, l.running_mean), param(r, l.running_var),
                                  batchnorm_shape(r, l));
        }
        break;
      case LayerKind::relu:
        relu_forward(out, in, tensor_size(r, l.inputs[0]));
        break;
      case LayerKind::maxpool:
        maxpool2d_forward(out, r.argmax[i].data(), in, pool_shape(r, l));
        break;
      case LayerKind::global_avgpool:
        global_avgpool_forward(out, in, r.batch, s.c, s.h, s.w);
        break;
      case LayerKind::fc:
        linear_forward(out, in, param(r, l.weight), param(r, l.bias_param),
                       {r.batch, l.in_channels, l.out_channels});
        break;
      case LayerKind::add:
        add_forward(out, in, r.acts[size_t(l.inputs[1])].data(), tensor_size(r, l.inputs[0]));
        break;
    }
  }
}

// dacts[id] += din. The image (tensor 0) has no gradient.
void accumulate(ReferenceNet& r, int id, const float* din) {
  if (id == 0) return;
  std::vector<float>& d = r.dacts[size_t(id)];
  for (size_t k = 0; k < d.size(); ++k) d[k] += din[k];
}

// Every trainable parameter's gradient, from dacts.back() (dloss/dlogits) down. Each param
// belongs to one layer, so its gradient is written once; activations' gradients are summed.
void backward(ReferenceNet& r) {
  for (size_t i = r.net.layers.size(); i-- > 0;) {
    const Layer& l = r.net.layers[i];
    const int in_id = l.inputs[0];
    const float* in = r.acts[size_t(in_id)].data();
    const float* dout = r.dacts[size_t(l.output)].data();
    float* din = r.scratch.data();
    const ActShape& s = r.shapes[size_t(in_id)];
    switch (l.kind) {
      case LayerKind::conv:
        // The network's first conv reads the image: its input gradient is not computed.
        conv2d_backward(in_id == 0 ? nullptr : din, grad(r, l.weight), dout, in, param(r, l.weight),
                        conv_shape(r, l));
        break;
      case LayerKind::batchnorm:
        batchnorm_backward(din, grad(r, l.weight), grad(r, l.bias_param), dout, in,
                           param(r, l.weight), r.bn_mean[i].data(), r.bn_rstd[i].data(),
                           batchnorm_shape(r, l));
        break;
      case LayerKind::relu:
        relu_backward(din, dout, r.acts[size_t(l.output)].data(), tensor_size(r, in_id));
        break;
      case LayerKind::maxpool:
        maxpool2d_backward(din, dout, r.argmax[i].data(), pool_shape(r, l));
        break;
      case LayerKind::global_avgpool:
        global_avgpool_backward(din, dout, r.batch, s.c, s.h, s.w);
        break;
      case LayerKind::fc:
        linear_backward(din, grad(r, l.weight), grad(r, l.bias_param), dout, in, param(r, l.weight),
                        {r.batch, l.in_channels, l.out_channels});
        break;
      case LayerKind::add:
        // Both inputs receive dout unchanged (add_backward's contract), added here directly.
        accumulate(r, l.inputs[0], dout);
        accumulate(r, l.inputs[1], dout);
        continue;
    }
    accumulate(r, in_id, din);
  }
}

}  // namespace

float forward_backward(ReferenceNet& r, const float* images, const int32_t* labels,
                       float label_smoothing) {
  const int64_t classes = r.net.num_classes;
  for (int64_t n = 0; n < r.batch; ++n) {
    if (labels[n] < 0 || labels[n] >= classes) {
      fail("reference network {}: label {} of image {} is outside [0, {})", r.net.name, labels[n],
           n, classes);
    }
  }
  if (!(label_smoothing >= 0.f && label_smoothing <= 1.f)) {
    fail("reference network {}: label smoothing {} is outside [0, 1]", r.net.name, label_smoothing);
  }
  forward(r, images, /*train=*/true);
  const CrossEntropyShape ce{r.batch, classes, label_smoothing};
  const float loss = cross_entropy_forward(r.probs.data(), r.acts.back().data(), labels, ce);
  for (size_t t = 1; t < r.dacts.size(); ++t) std::fill(r.dacts[t].begin(), r.dacts[t].end(), 0.f);
  cross_entropy_backward(r.dacts.back().data(), r.probs.data(), labels, ce);
  backward(r);
  return loss;
}

std::span<const float> forward_eval(ReferenceNet& r, const float* images) {
  forward(r, images, /*train=*/false);
  return logits(r);
}

ReferenceNet make_reference_net(const Network& net, int64_t batch, int64_t height, int64_t width) {
  if (batch < 1) fail("reference network {}: batch {} given, expected at least 1", net.name, batch);
  ReferenceNet r;
  r.net = net;
  r.batch = batch;
  r.height = height;
  r.width = width;
  r.shapes = infer_shapes(net, height, width);
  STOKER_CHECK(!net.layers.empty() && net.layers.back().kind == LayerKind::fc);
  STOKER_CHECK(net.layers.back().output == int(r.shapes.size()) - 1);

  for (const Param& p : net.params) {
    const bool f32 = p.dtype == ParamType::f32;
    r.params.emplace_back(f32 ? size_t(numel(p)) : 0, 0.f);
    r.counts.emplace_back(f32 ? 0 : size_t(numel(p)), int64_t{0});
    r.grads.emplace_back(p.trainable ? size_t(numel(p)) : 0, 0.f);
  }
  int64_t largest = 0;
  for (size_t t = 0; t < r.shapes.size(); ++t) {
    const int64_t n = tensor_size(r, int(t));
    largest = std::max(largest, n);
    r.acts.emplace_back(size_t(n), 0.f);
    r.dacts.emplace_back(t == 0 ? 0 : size_t(n), 0.f);
  }
  r.scratch.assign(size_t(largest), 0.f);
  r.probs.assign(size_t(batch * net.num_classes), 0.f);

  r.bn_mean.resize(net.layers.size());
  r.bn_rstd.resize(net.layers.size());
  r.argmax.resize(net.layers.size());
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const Layer& l = net.layers[i];
    const ActShape& in = r.shapes[size_t(l.inputs[0])];
    if (l.kind == LayerKind::batchnorm) {
      // Training mode needs two values per channel for the unbiased running variance.
      if (batch * in.h * in.w < 2) {
        fail(
            "reference network {}: {} sees {} value per channel at batch {} and {}x{} input; "
            "training batch norm needs more than one (use a larger batch or input)",
            net.name, l.name, batch * in.h * in.w, batch, height, width);
      }
      r.bn_mean[i].assign(size_t(in.c), 0.f);
      r.bn_rstd[i].assign(size_t(in.c), 0.f);
    } else if (l.kind == LayerKind::maxpool) {
      r.argmax[i].assign(size_t(tensor_size(r, l.output)), 0);
    }
  }
  return r;
}

void load_parameters(ReferenceNet& r, const Checkpoint& ckpt, std::string_view source) {
  check_checkpoint(ckpt, r.net, source);
  for (size_t i = 0; i < r.net.params.size(); ++i) {
    const Tensor* t = find_tensor(ckpt, r.net.params[i].name);
    STOKER_CHECK(t != nullptr);  // check_checkpoint found every key
    if (r.net.params[i].dtype == ParamType::f32) {
      copy_values(*t, r.params[i]);
    } else {
      copy_values(*t, r.counts[i]);
    }
  }
}

std::span<const float> logits(const ReferenceNet& r) {
  return r.acts.back();
}

std::span<const float> parameter(const ReferenceNet& r, std::string_view name) {
  const int i = param_index(r.net, name);
  STOKER_CHECK_MSG(i >= 0 && r.net.params[size_t(i)].dtype == ParamType::f32,
                   "no f32 parameter or buffer '{}'", name);
  return r.params[size_t(i)];
}

std::span<const float> gradient(const ReferenceNet& r, std::string_view name) {
  const int i = param_index(r.net, name);
  STOKER_CHECK_MSG(i >= 0 && r.net.params[size_t(i)].trainable, "no trainable parameter '{}'",
                   name);
  return r.grads[size_t(i)];
}

}  // namespace stoker::ref
