// SPDX-License-Identifier: Apache-2.0
// Draws each parameter from its own counter-based stream, keyed by (seed, index).
#include "models/init.h"

#include <algorithm>

#include "common/error.h"
#include "common/rng.h"
#include "models/normal.h"

namespace stoker {

namespace {

constexpr uint64_t kInitStream = 0x696e6974;  // "init": apart from the loader's streams

const Param& checked(const Network& net, size_t index, size_t size, ParamType dtype) {
  STOKER_CHECK(index < net.params.size());
  const Param& p = net.params[index];
  STOKER_CHECK_MSG(p.dtype == dtype, "{}: wrong dtype", p.name);
  STOKER_CHECK_MSG(static_cast<int64_t>(size) == numel(p), "{}: {} values for {}", p.name, size,
                   numel(p));
  return p;
}

}  // namespace

void init_param(const Network& net, size_t index, uint64_t seed, std::span<float> out) {
  const Param& p = checked(net, index, out.size(), ParamType::f32);
  Rng rng(seed, 0, index, kInitStream);
  switch (p.init.kind) {
    case Init::Kind::zeros:
      std::fill(out.begin(), out.end(), 0.0f);
      break;
    case Init::Kind::ones:
      std::fill(out.begin(), out.end(), 1.0f);
      break;
    case Init::Kind::normal:
      fill_normal(rng, p.init.scale, out);
      break;
    case Init::Kind::uniform:
      for (float& v : out) v = static_cast<float>(rng.uniform(-p.init.scale, p.init.scale));
      break;
  }
}

void init_param(const Network& net, size_t index, uint64_t /*seed*/, std::span<int64_t> out) {
  const Param& p = checked(net, index, out.size(), ParamType::i64);
  STOKER_CHECK_MSG(p.init.kind == Init::Kind::zeros, "{}: an i64 buffer starts at 0", p.name);
  std::fill(out.begin(), out.end(), int64_t{0});
}

}  // namespace stoker
