// SPDX-License-Identifier: Apache-2.0
// What `stoker bench` and `stoker study` share: the report header's facts (UTC date, library
// versions), small string helpers for their option lists and dataset names, and warming the
// page cache before a warm run. Not a runner: each command times its own loop.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace stoker {

struct Index;

// "2026-11-23T17:00:00Z"
std::string utc_now();
// Non-empty parts of `s` between `sep`s.
std::vector<std::string> split(const std::string& s, char sep);
// The last path component of a dataset root or nfs:// URL (its ?args dropped).
std::string short_name(const std::string& root);
// Reads every sample once so a warm run measures the loader, not the first touch of storage.
// Local data only: a remote source (nfs://) has no page cache of ours to warm.
void warm_page_cache(const Index& index);
// {"libjpeg-turbo": ..., "opencv": ..., "onetbb": ..., "xxhash": ...} as bench reports them.
nlohmann::json library_versions();

}  // namespace stoker
