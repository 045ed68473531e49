// SPDX-License-Identifier: Apache-2.0
// Names and counts over the plain network description.
#include "models/network.h"

#include "common/error.h"

namespace stoker {

std::string_view kind_name(LayerKind kind) {
  switch (kind) {
    case LayerKind::conv:
      return "conv";
    case LayerKind::batchnorm:
      return "batchnorm";
    case LayerKind::relu:
      return "relu";
    case LayerKind::maxpool:
      return "maxpool";
    case LayerKind::global_avgpool:
      return "avgpool";
    case LayerKind::fc:
      return "fc";
    case LayerKind::add:
      return "add";
  }
  STOKER_CHECK_MSG(false, "LayerKind {}", static_cast<int>(kind));
  return {};
}

std::string_view init_name(Init::Kind kind) {
  switch (kind) {
    case Init::Kind::zeros:
      return "zeros";
    case Init::Kind::ones:
      return "ones";
    case Init::Kind::normal:
      return "normal";
    case Init::Kind::uniform:
      return "uniform";
  }
  STOKER_CHECK_MSG(false, "Init::Kind {}", static_cast<int>(kind));
  return {};
}

int64_t numel(const Param& p) {
  int64_t n = 1;
  for (const int64_t d : p.shape) n *= d;
  return n;
}

int64_t trainable_count(const Network& net) {
  int64_t n = 0;
  for (const Param& p : net.params) n += p.trainable ? numel(p) : 0;
  return n;
}

int64_t buffer_count(const Network& net) {
  int64_t n = 0;
  for (const Param& p : net.params) n += p.trainable ? 0 : numel(p);
  return n;
}

int param_index(const Network& net, std::string_view name) {
  for (size_t i = 0; i < net.params.size(); ++i) {
    if (net.params[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace stoker
