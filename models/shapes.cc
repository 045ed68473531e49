// SPDX-License-Identifier: Apache-2.0
// Shape inference layer by layer, with torch's output-size rule for windows:
// out = floor((in + 2 * padding - kernel) / stride) + 1, defined only when the padded input
// holds at least one kernel.
#include "models/shapes.h"

#include <fmt/format.h>

#include "common/error.h"

namespace stoker {

namespace {

// One spatial side through a window layer; fails with the reason when it cannot.
int64_t window_out(const Network& net, const Layer& l, int64_t in, int64_t height, int64_t width) {
  const int64_t padded = in + 2 * l.padding;
  if (padded < l.kernel) {
    fail(
        "{}: input {}x{} is too small: layer {} ({} {}x{}, stride {}, padding {}) gets a side "
        "of {}, {} with padding, smaller than its kernel",
        net.name, height, width, l.name, kind_name(l.kind), l.kernel, l.kernel, l.stride, l.padding,
        in, padded);
  }
  return (padded - l.kernel) / l.stride + 1;
}

}  // namespace

std::string to_string(const ActShape& s) {
  return fmt::format("{}x{}x{}", s.c, s.h, s.w);
}

std::vector<ActShape> infer_shapes(const Network& net, int64_t height, int64_t width) {
  if (height < 1 || width < 1) {
    fail("{}: input {}x{} is too small: an image needs at least 1x1 pixels", net.name, height,
         width);
  }
  if (height > kMaxInputSide || width > kMaxInputSide) {
    fail(
        "{}: input {}x{} is too large: Stoker counts sizes and FLOPs in 64 bits and accepts "
        "sides up to {}",
        net.name, height, width, kMaxInputSide);
  }
  std::vector<ActShape> shapes(net.tensors.size());
  shapes[0] = {net.in_channels, height, width};
  for (const Layer& l : net.layers) {
    STOKER_CHECK(!l.inputs.empty() && l.output >= 1);
    for (const int t : l.inputs) STOKER_CHECK(t >= 0 && t < l.output);
    const ActShape in = shapes[l.inputs[0]];
    ActShape out = in;
    switch (l.kind) {
      case LayerKind::conv:
        STOKER_CHECK(in.c == l.in_channels && l.stride >= 1 && l.groups >= 1);
        out = {l.out_channels, window_out(net, l, in.h, height, width),
               window_out(net, l, in.w, height, width)};
        break;
      case LayerKind::maxpool:
        STOKER_CHECK(l.stride >= 1);
        out.h = window_out(net, l, in.h, height, width);
        out.w = window_out(net, l, in.w, height, width);
        break;
      case LayerKind::batchnorm:
        STOKER_CHECK(in.c == l.in_channels);
        break;
      case LayerKind::relu:
        break;
      case LayerKind::add: {
        const ActShape& s = shapes[l.inputs.at(1)];
        STOKER_CHECK_MSG(s.c == in.c && s.h == in.h && s.w == in.w, "{}: {} + {}", l.name,
                         to_string(in), to_string(s));
        break;
      }
      case LayerKind::global_avgpool:
        out = {in.c, 1, 1};
        break;
      case LayerKind::fc:
        // torch.flatten(x, 1) before fc: the features are all of C x H x W.
        STOKER_CHECK(in.elements() == l.in_channels);
        out = {l.out_channels, 1, 1};
        break;
    }
    shapes[l.output] = out;
  }
  return shapes;
}

}  // namespace stoker
