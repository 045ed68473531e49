// SPDX-License-Identifier: Apache-2.0
// Top-1 / top-5 accuracy and mean cross-entropy of a backend's current weights over a
// dataset, one pass in index order: what `stoker eval` prints and what `stoker train --val`
// measures between steps. Not a loader or a backend: it drives both.
#pragma once

#include <cstdint>
#include <string>

#include "loader/index/index.h"
#include "loader/loader_config.h"
#include "train/backend.h"

namespace stoker {

struct EvalResult {
  int64_t images = 0;
  double top1 = 0, top5 = 0, loss = 0;  // fractions of `images`; mean loss
  size_t skipped = 0;                   // bad samples the loader skipped
  bool interrupted = false;             // cut short by an interrupt: `images` were seen
};

// `config` must not drop the short last batch (every image counts): it is padded to the
// backend's batch, whose extra rows are computed and ignored (eval-mode batch norm treats
// images independently). `label` names the progress line; progress off: nothing drawn.
EvalResult evaluate(Backend& backend, const Index& index, const LoaderConfig& config, int classes,
                    int64_t batch, const std::string& label, bool progress = true);

}  // namespace stoker
