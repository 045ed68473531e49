// SPDX-License-Identifier: Apache-2.0
// Top-1 / top-5 accuracy and mean cross-entropy of a backend's current weights over a
// dataset, one pass in index order: what `stoker eval` prints and what `stoker train --val`
// measures between steps, with the one evaluation loader both use. Not a loader or a
// backend: it drives both.
#pragma once

#include <cstdint>
#include <string>

#include "loader/index/index.h"
#include "loader/loader_config.h"
#include "tools/options/loader_options.h"
#include "train/backend.h"
#include "train/gpu_decode.h"

namespace stoker {

struct EvalResult {
  int64_t images = 0;
  double top1 = 0, top5 = 0, loss = 0;  // fractions of `images`; mean loss
  size_t skipped = 0;                   // bad samples the loader skipped
  bool interrupted = false;             // cut short by an interrupt: `images` were seen
};

// The evaluation loader (`eval`, train's --val): `l`'s options with its one reader (`who`
// names the command in errors), the centre crop in index order at `size` (0: l's size, or
// the schedule's last size), of the short side resized to `resize` (0: 256/224 of the crop,
// as torchvision's resize_size). stoker::UsageError when `resize` is smaller than the crop.
LoaderConfig evaluation_loader(const LoaderOptions& l, const char* who,
                               const SizeSchedule& schedule = {}, int size = 0, int resize = 0);

// The batches come through the training set-up's feed (evaluation_feed, setup/trainer.h): in
// the backend's memory and, under `config.decode_device` gpu, decoded into its device stage
// (`gpu`'s options); each batch is released (Backend::release_input) before the next is asked
// for, as in the training loop. Every image counts: the short last batch is kept and padded
// to the backend's batch, whose extra rows are computed and ignored (eval-mode batch norm
// treats images independently). `label` names the progress line; progress off: nothing drawn.
EvalResult evaluate(Backend& backend, const Index& index, const LoaderConfig& config, int classes,
                    int64_t batch, const std::string& label, bool progress = true,
                    const GpuDecodeOptions& gpu = {});

}  // namespace stoker
