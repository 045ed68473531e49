// SPDX-License-Identifier: Apache-2.0
// The library's pieces of a trainer set-up, for any program that runs a backend on the
// loader's batches (examples/train_resnet_cpu.cc): the backend's configuration from the
// loader's (input format from the output spec, the first step's image size, threads), and the
// loader's iterators in the backend's host memory (Backend::host_memory). The order is always
// backend_config -> (the caller's compute options) -> make_backend -> training_iterator or
// evaluation_iterator. The commands' one set-up (`stoker train`, `eval`,
// `study`, train's --val) is tools/setup/trainer.h, built on these. Not the compute options
// (precision, algorithms, collective: the caller's) nor the loop (train/train_loop.h).
#pragma once

#include <cstdint>
#include <memory>

#include "loader/index/index.h"
#include "loader/iterator.h"
#include "loader/loader_config.h"
#include "train/backend.h"

namespace stoker {

// The backend's input for the loader's output: its dtype and layout; u8 pixels are
// normalised by the backend with the loader's mean and std.
InputSpec input_spec(const OutputSpec& output);

// A backend planned for `loader`'s batches of `batch` images at the size of global step
// `step` in `epoch` (a size schedule's, else the transform's; the loop re-plans when it
// changes), with `threads` compute threads (0: every online cpu). The caller adds its compute
// options before make_backend.
BackendConfig backend_config(const LoaderConfig& loader, int64_t batch, int threads,
                             uint64_t epoch = 0, uint64_t step = 0);

// The iterator a training loop pulls from: `loader`'s batches in `backend`'s memory, short
// last batches dropped (the backend is planned for one batch size).
std::unique_ptr<Iterator> training_iterator(const Index& index, LoaderConfig loader,
                                            const Backend& backend);

// The iterator an evaluation pass pulls from: `loader`'s batches in `backend`'s memory, every
// sample once, the short last batch kept (its consumer stages it padded to the planned batch).
std::unique_ptr<Iterator> evaluation_iterator(const Index& index, LoaderConfig loader,
                                              const Backend& backend);

}  // namespace stoker
