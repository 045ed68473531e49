// SPDX-License-Identifier: Apache-2.0
// The library's warnings (common/log.h) for Python: the sink this installs queues them, from
// whatever thread the loader raises them on, and drain_log() hands them to Python's `logging`
// (python/stoker/__init__.py) at points where Python holds the GIL anyway: after each batch
// and on close. Queuing rather than calling into Python from the sink keeps a loader thread
// from ever waiting for the GIL while the Python thread waits for that loader thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace stoker::py {

void install_log_sink();

// (level, text) pairs in the order raised; level is "warning" or "note". At most kLogQueueMax
// are kept between two drains; beyond that one entry says how many were dropped.
constexpr size_t kLogQueueMax = 1000;
std::vector<std::pair<std::string, std::string>> drain_log();

}  // namespace stoker::py
