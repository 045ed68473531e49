// SPDX-License-Identifier: Apache-2.0
// Everything that decides what a loader produces and how: reader policy, sampler, transform,
// output format, decode limits and the on-error policy. Plain data, filled from the CLI.
#pragma once

#include <cstddef>
#include <string>

#include "augment/collate.h"
#include "augment/crop.h"
#include "augment/decoder.h"
#include "loader/bad_samples.h"
#include "loader/sampler.h"

namespace stoker {

struct ReaderPolicy {
  enum class Kind { serial, threads } kind = Kind::serial;
  int workers = 1;
  std::string text() const;
};

// "serial" or "threads:N". Lists the valid forms when given anything else.
ReaderPolicy parse_reader(const std::string& text);

struct LoaderConfig {
  ReaderPolicy reader;
  SamplerConfig sampler;
  size_t prefetch = 2;  // batches prepared ahead of the one the consumer holds
  TransformConfig transform;
  OutputSpec output;  // width/height follow transform.size
  DecodeOptions decode;
  ErrorPolicy on_error = ErrorPolicy::skip;
  size_t max_replacements = 64;  // consecutive failures before giving up under `skip`
  bool warn = true;              // one-line warning per bad file on stderr
};

}  // namespace stoker
