// SPDX-License-Identifier: Apache-2.0
// Where Stoker keeps what it makes for itself (the built-in datasets of `bench` and `study
// --quick`): the XDG cache directory, not the current directory, so that running a
// command somewhere does not leave data there. It creates nothing.
#pragma once

#include <string>

namespace stoker {

// $XDG_CACHE_HOME/stoker when that is an absolute path (the XDG Base Directory rule),
// else $HOME/.cache/stoker, else ./stoker-cache (no home at all).
std::string stoker_cache_dir();

}  // namespace stoker
