// SPDX-License-Identifier: Apache-2.0
// What `stoker bench` and `stoker study` share: the report header's facts (UTC date, library
// versions), small string helpers for their option lists and dataset names, and warming the
// page cache before a warm run. Not a runner: each command times its own loop.
#pragma once

#include <nlohmann/json.hpp>

#include <span>
#include <string>
#include <vector>

#include "loader/sampler/sampler.h"

namespace stoker {

struct Index;

// "2026-11-23T17:00:00Z"
std::string utc_now();
// Non-empty parts of `s` between `sep`s.
std::vector<std::string> split(const std::string& s, char sep);
// The last path component of a dataset root or nfs:// URL (its ?args dropped).
std::string short_name(const std::string& root);
struct WarmStats {
  size_t files = 0;    // samples read (a packed dataset's members, not its shard files)
  uint64_t bytes = 0;  // bytes read
};
// Reads each of `samples` once so a warm run measures the loader, not the first touch of
// storage: into our page cache for local data, into the NFS server's for nfs:// (read
// through it, as the runs will), so that local and NFS runs are warm alike. Unreadable
// samples are left to the run's on-error policy; a broken source (no server) throws.
WarmStats warm_samples(const Index& index, std::span<const uint32_t> samples);
// Every sample of the dataset (stoker study, whose cells differ in what they read).
WarmStats warm_page_cache(const Index& index);
// The distinct samples a run of `epochs` epochs under `sampler` reads in its first
// `max_batches` batches (0: all of them), in first-read order: what `stoker bench` warms.
// Replacements for bad samples are not included (found only by reading).
std::vector<uint32_t> run_samples(const Index& index, const SamplerConfig& sampler, int epochs,
                                  size_t max_batches);
// The built-in default datasets of `bench` and `qualify` with no dataset given: 256, 512 and
// 1024 px, 10 classes of 40 images, generated in `root` once (saying so), then reused.
std::vector<std::string> builtin_datasets(const std::string& root);
// {"libjpeg-turbo": ..., "opencv": ..., "onetbb": ..., "xxhash": ...} as bench reports them.
nlohmann::json library_versions();

}  // namespace stoker
