// SPDX-License-Identifier: Apache-2.0
// How samples are read and decoded, chosen at run time:
//   serial        the caller's thread does everything (the classic baseline)
//   threads:N     N oneTBB worker threads read and decode
//   processes:N   N worker processes decode into shared-memory batch slots
//   uring:QD[:T]  one io_uring submitter keeps QD reads in flight; T threads decode
//                 (default: one per online CPU)
#pragma once

#include <string>

namespace stoker {

struct ReaderPolicy {
  enum class Kind { serial, threads, processes, uring } kind = Kind::serial;
  int workers = 1;      // threads and processes: workers; uring: decode threads
  int queue_depth = 0;  // uring: reads in flight
  std::string text() const;
};

// Parses the forms above; anything else is a stoker::Error listing them.
ReaderPolicy parse_reader(const std::string& text);

}  // namespace stoker
