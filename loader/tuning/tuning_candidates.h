// SPDX-License-Identifier: Apache-2.0
// What `--reader auto` tries, built from the host's cores: every reader kind at core counts
// 1, 2, 4, ... up to the cores (the cores themselves last), at the configured prefetch
// depth; then, for the best of those, shallower and deeper prefetch. Whether a candidate can
// run here (a worker binary, io_uring) is found by trying it (reader_tuner.h skips and names
// those that cannot), never assumed.
#pragma once

#include <cstddef>
#include <vector>

#include "loader/tuning/tuning_choice.h"

namespace stoker {

// serial; threads:N; processes:N; uring:QD:N (QD = 8N: reads in flight for N decoders), for N
// in 1, 2, 4, ..., cores; each at `prefetch`. cores < 1 counts as 1.
std::vector<TuningCandidate> reader_candidates(int cores, size_t prefetch);

// `best`'s reader at prefetch 1 and at twice best.prefetch (at most 8), those that differ
// from best.prefetch; none for serial, which prepares nothing ahead.
std::vector<TuningCandidate> prefetch_candidates(const TuningCandidate& best);

}  // namespace stoker
