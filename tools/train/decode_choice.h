// SPDX-License-Identifier: Apache-2.0
// --decode cpu|gpu|auto for `stoker train`: where the loader's images are decoded. auto
// picks the GPU where the CPU path is measured to fall short of a GPU trainer: stored images
// above 512 px a side (on the H200 machine's 16 cores, threads:16 kept the data wait at 0-0.1%
// with 256 and 512 px datasets and left the trainer waiting half the time with 1024 px ones,
// all at 224 px output; docs/PERFORMANCE.md), with a backend that takes batches from the
// device (BackendCaps::device_input: cuda), a reader in this process, no colour operations, and GPU
// decode able to run here. The choice and its reason go to the run's `#` lines and JSON.
#pragma once

#include <string>
#include <string_view>

#include "loader/index/index.h"
#include "loader/loader_config.h"
#include "tools/options/command_options.h"
#include "train/backend.h"

namespace stoker {

struct DecodeChoice {
  DecodeDevice device = DecodeDevice::cpu;
  std::string reason;  // why, for auto ("auto: 1024 px > 512, cuda backend")
};

// `mode`: --decode's word (parse_decode_mode, tools/options/command_options.h). gpu where it
// cannot run is an error naming why; auto then falls back to cpu, saying why. `caps`: what the
// backend named `backend` declares (backend_caps); the name is only for the messages.
// stored_side: the dataset's stored images' larger side (stored_image_side; 0: unknown, auto
// then stays on the CPU).
DecodeChoice choose_decode(DecodeMode mode, const LoaderConfig& lc, std::string_view backend,
                           const BackendCaps& caps, int stored_side);

// The larger side of the dataset's stored images: the median over the headers of up to
// `samples` files spread evenly over the index. 0 when none could be read (remote files,
// nothing that parses as an image).
int stored_image_side(const Index& index, int samples = 9);

}  // namespace stoker
