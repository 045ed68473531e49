// SPDX-License-Identifier: Apache-2.0
// Which reader reads and decodes samples (--reader), chosen at run time; each kind is
// readers/reader_<kind>.cc behind readers/reader.h:
//   serial        the caller's thread does everything (the classic baseline)
//   threads:N     N oneTBB threads read and decode
//   processes:N   N stoker-worker processes decode into shared-memory batch slots
//   uring:QD[:T]  one io_uring submitter keeps QD reads in flight; T threads decode
//                 (default: one per online CPU)
#pragma once

#include <cstdint>
#include <string>

namespace stoker {

struct ReaderSpec {
  enum class Kind { serial, threads, processes, uring } kind = Kind::serial;
  // The threads that read and decode: threads:N's N; processes:N's N (one per stoker-worker
  // process); uring:QD:T's T (decode threads). serial: 1.
  int threads = 1;
  int queue_depth = 0;  // uring: reads in flight
  std::string text() const;
};

// What a reader needs of its source, declared per kind as a source declares its capabilities
// (Source::kAsync): uring:QD submits reads and needs an asynchronous source; the Iterator
// refuses it any other (a stoker::UsageError naming both), and `--source auto` resolves to an
// asynchronous one for it. The other kinds call read() only and take any source.
inline bool needs_async_source(const ReaderSpec& r) {
  return r.kind == ReaderSpec::Kind::uring;
}

// Reads in flight this reader asks of its source (SourceSpec::queue_depth): QD for a reader
// that needs an asynchronous source, 0 (the source's default) for the others.
inline uint32_t source_queue_depth(const ReaderSpec& r) {
  return needs_async_source(r) ? static_cast<uint32_t>(r.queue_depth) : 0;
}

// Parses the forms above; anything else is a stoker::Error listing them.
ReaderSpec parse_reader(const std::string& text);

}  // namespace stoker
