// SPDX-License-Identifier: Apache-2.0
// MAC counting over the layer list and the shapes from infer_shapes.
#include "models/flops.h"

#include "common/error.h"

namespace stoker {

int64_t layer_macs(const Layer& l, const std::vector<ActShape>& shapes) {
  STOKER_CHECK(l.output >= 0 && static_cast<size_t>(l.output) < shapes.size());
  const ActShape& out = shapes[l.output];
  switch (l.kind) {
    case LayerKind::conv:
      return out.elements() * (l.in_channels / l.groups) * l.kernel * l.kernel;
    case LayerKind::fc:
      return static_cast<int64_t>(l.in_channels) * l.out_channels;
    default:
      return 0;
  }
}

ForwardCost forward_cost(const Network& net, const std::vector<ActShape>& shapes) {
  STOKER_CHECK(shapes.size() == net.tensors.size());
  ForwardCost c;
  for (const Layer& l : net.layers) {
    c.macs += layer_macs(l, shapes);
    c.activations += shapes[l.output].elements();
  }
  return c;
}

}  // namespace stoker
