// SPDX-License-Identifier: Apache-2.0
// The readers every reader test runs: the reader suite's rows (reader_suite.h) and the tests
// that cannot be suite rows but run each reader all the same (a server stopped under it, the
// page cache it must drop, GPU decode, sequential shard order). A new reader is one line here.
#pragma once

namespace stoker::suite {

inline constexpr const char* kReaders[] = {"serial",      "threads:1", "threads:3",
                                           "processes:2", "uring:4:2", "uring:16:3"};

}  // namespace stoker::suite
