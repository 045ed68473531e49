// SPDX-License-Identifier: Apache-2.0
// Checks that a command's outputs can be written before the command does its (long) work, so
// a typo in --json or --save fails in a second, not after an hour of benchmarking. The checks
// create and remove a probe file beside the output; they never create, truncate or remove
// the output itself. Not a guarantee: a disk can still fill up later.
#pragma once

#include <string>

namespace stoker {

// `path` (an output file named by `option`, e.g. "--json") can be written: its directory
// exists, is a directory and accepts a new file; `path` itself is not a directory and, when
// it exists, opens for writing. Empty `path`: nothing to check. stoker::Error naming the
// option, the path and the reason otherwise.
void check_writable(const std::string& option, const std::string& path);

// `dir` (an output directory named by `option`, e.g. "--out") is a writable directory, or
// does not exist yet and its nearest existing ancestor is one (it will be created).
void check_writable_dir(const std::string& option, const std::string& dir);

}  // namespace stoker
