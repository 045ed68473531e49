// SPDX-License-Identifier: Apache-2.0
// A fleet: N emulated accelerators fed at once, each by a loader of its own reading its own
// shard of every epoch (sampler rank i of N, as MLPerf Storage's processes read theirs), all
// in this process, sharing the host's cores and the storage. One step of `stoker qualify`'s
// search; the search and its verdicts are cmd_qualify.cc.
//
// Loaders in one process, not MPI ranks: our loaders hold no global lock (MLPerf Storage's
// processes exist to get round Python's), so threads share the cores and the storage as
// processes would, and one process starts the fleet together, stops it together and adds up
// its figures with no launcher. A processes:N reader still forks its workers per loader.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>

#include "loader/index/index.h"
#include "loader/loader_config.h"
#include "train/emulated_accelerator.h"

namespace stoker {

struct FleetRun {
  int accelerators = 1;
  double seconds = 2;  // each accelerator's timed window at its full rate
  size_t warmup = 2;   // batches each accelerator takes before its window opens
  // The CPU seconds so far of whatever else serves the data on this machine (our NFS
  // server); null: nothing.
  std::function<double()> server_cpu_seconds;
};

// Runs the fleet once. Each accelerator takes warmup + max(judged minimum, seconds x its
// rate) batches, or stops at a deadline (twice their time at full rate + 2 s: starved); its AU
// is judged over its window (common/measures.h). The result (docs/FORMATS.md, qualify.json,
// "fleet"): accelerators, held (every AU >= target over a window long enough to judge),
// au_min, au_median, images_per_s and read_mb_per_s (the fleet's sums), data_wait_share
// (mean), loader_cores_busy, server_cores_busy, machine_cores_busy (everyone's), epochs (of the
// dataset read in the run), not_enough_data, per_accelerator [{accelerator_utilisation,
// images_per_s, data_wait_share, batches, window_s}]. Throws stoker::Error naming the accelerator
// whose loader failed; Interrupted on a signal.
nlohmann::json run_fleet(const Index& index, const LoaderConfig& base,
                         const EmulatedAccelerator& accelerator, const FleetRun& run);

}  // namespace stoker
