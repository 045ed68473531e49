// SPDX-License-Identifier: Apache-2.0
// The source layer: where a sample's bytes come from, behind one narrow interface that every
// reader (serial, threads:N, processes:N, uring:QD:T) uses. A source moves bytes only: it
// never decodes, never applies the --on-error policy and never chooses the order.
//
// How a new source plugs in (a shard or NFS source, say):
//   1. one file loader/sources/source_<name>.cc with a class deriving from Source: read()
//      always; capabilities() saying what else it can do (kAsync: it keeps several reads in
//      flight, with submit()/reap() and queue_depth()); clone() giving an instance with its
//      own descriptors or connection;
//   2. its factory make_<name>_source, called by make_source() (source.cc) for a kind of its
//      own, as shards and nfs are; a source
//      built only with an optional library gets a stub file instead, as
//      sources/source_nfs_stub.cc stands for source_nfs.cc without libnfs (loader/CMakeLists.txt);
//   3. one line in the reader suite's table (tests/loader/reader_suite.h): it is then
//      tested under every reader, clean and corrupted, for checksums equal to serial's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace stoker {

// Where one sample's bytes are: the whole of `file`, or `length` bytes at `offset` of it (a
// member of a packed shard). Built only by locate_sample() (index/index.h), for Index and for
// the worker processes' shared index alike; `file` points into the caller's string.
struct SampleLocation {
  static constexpr uint64_t kWholeFile = UINT64_MAX;
  std::string_view file;  // a local path or a URL (nfs://host/export/path)
  uint64_t offset = 0;
  uint64_t length = kWholeFile;  // kWholeFile: the whole file as it is now (fstat)
  bool whole_file() const { return length == kWholeFile; }
};

// A growable read buffer, 4 KiB-aligned (O_DIRECT). Owned by the caller, grown by sources.
class ReadBuffer {
 public:
  static constexpr size_t kAlign = 4096;
  ReadBuffer() = default;
  ~ReadBuffer();
  ReadBuffer(ReadBuffer&& o) noexcept;
  ReadBuffer& operator=(ReadBuffer&& o) noexcept;
  ReadBuffer(const ReadBuffer&) = delete;
  ReadBuffer& operator=(const ReadBuffer&) = delete;
  // At least `bytes` of room; keeps nothing of the old contents. Throws when memory is short.
  void reserve(size_t bytes);
  uint8_t* data() const { return data_; }
  size_t capacity() const { return capacity_; }

 private:
  uint8_t* data_ = nullptr;
  size_t capacity_ = 0;
};

// One asynchronous read, as fio's io_u: the caller's tag comes back with the result.
struct ReadRequest {
  uint64_t tag = 0;
  SampleLocation where;          // `file` must stay valid only during submit()
  ReadBuffer* buffer = nullptr;  // the caller's, untouched by the caller until reaped
};

struct ReadCompletion {
  uint64_t tag = 0;
  size_t bytes = 0;     // at the request's buffer->data()
  int64_t read_ns = 0;  // from submit to completion
  std::string error;    // empty: success; else the reason, naming the file or URL
};

// Moves up to `max` of an asynchronous source's finished reads, oldest first, from `done` to
// `out`; returns how many (the tail of every Source::reap).
inline size_t take_completions(std::deque<ReadCompletion>& done, std::vector<ReadCompletion>& out,
                               size_t max) {
  size_t n = 0;
  for (; n < max && !done.empty(); ++n) {
    out.push_back(std::move(done.front()));
    done.pop_front();
  }
  return n;
}

// What a loader asks of the source layer: which source, and what the user chose of how it
// reads. The reads an asynchronous source keeps in flight are its reader's business, given to
// make_source in SourceSpec::queue_depth. Worker processes get these through their own wire
// form (process_pool/worker_protocol.h). A source the user named is the one that reads: no
// reader swaps it for another (a reader that needs an asynchronous one refuses the others).
struct SourceOptions {
  enum class Kind : uint32_t {
    automatic,  // from the dataset and the reader: nfs:// -> nfs; local files and packed
                // shards -> uring for a reader that submits reads, else shards or pread
    pread,      // local files, one buffered pread at a time
    uring,      // local files, io_uring, many reads in flight (submit/reap)
    null,       // no I/O at all: every sample is the same bytes (framework overhead)
    nfs,        // libnfs (make_nfs_source)
    shards,     // packed tar shards (make_shards_source)
  } kind = Kind::automatic;
  bool direct = false;            // O_DIRECT (uring)
  bool evict_after_read = false;  // drop what was read from the page cache (--cold)
  std::string null_file;          // null: serve this file's bytes; empty: a built-in JPEG
};

const char* source_kind_name(SourceOptions::Kind k);
// "auto", "pread", "uring", "null", "nfs", "shards" ("shard": its older name, deprecated, still
// read); anything else is a stoker::Error.
SourceOptions::Kind parse_source_kind(const std::string& text);

// What make_source needs to know of a dataset: its root and whether its samples are byte
// ranges of packed shards; enough to rebuild a source in a worker process that has only the
// shared index. (The index side makes one from an Index: source_spec in index/index.h.)
struct SourceSpec {
  std::string root;  // a directory or an nfs:// URL
  bool sharded = false;
  SourceOptions options;
  // Reads the reader keeps in flight through submit/reap (uring:QD; readers/reader_spec.h
  // source_queue_depth); 0: a reader that calls read() only (an asynchronous source then
  // keeps its own default). Non-zero makes `automatic` asynchronous for local files and
  // packed shards alike: the uring source.
  uint32_t queue_depth = 0;
};

// The source itself is broken (its server stopped answering, its connection dropped, its
// ring failed): not a bad sample, so no --on-error policy skips it; every reader stops with
// it. A stoker::Error, so it names the file/URL and the reason as any other.
class SourceBroken : public Error {
 public:
  using Error::Error;
};

// The interface. One instance per thread or process: instances share nothing mutable, so
// no hook needs a lock. Every error is a stoker::Error naming the file/URL and the reason.
class Source {
 public:
  virtual ~Source() = default;
  // What an instance can do besides read(), declared by each source (as fio's engine flags),
  // so that no reader decides by a source's name. The one declaration of each: a reader
  // that needs one asks for it here (readers/reader_spec.h needs_async_source).
  enum Capability : uint32_t {
    kAsync = 1u << 0,  // asynchronous: submit/reap, up to queue_depth() reads in flight
  };
  // Short name for reports and messages: "pread", "uring", "null", "nfs", "shards".
  virtual const char* name() const = 0;
  // The Capability flags of this instance, or-ed.
  virtual uint32_t capabilities() const = 0;
  bool asynchronous() const { return (capabilities() & kAsync) != 0; }
  // A new instance for another thread, with its own descriptors/connection/ring.
  virtual std::unique_ptr<Source> clone() const = 0;
  // Synchronous: all bytes of the sample, read into buf (grown as needed); returns them. (The
  // null source returns its own constant bytes, valid as long as the source.)
  virtual std::span<const uint8_t> read(const SampleLocation& where, ReadBuffer& buf) = 0;

  // Asynchronous sources only (kAsync); the defaults refuse.
  // Reads this instance can have in flight: at least 1.
  virtual size_t queue_depth() const;
  // Queues one read (at most queue_depth() unreaped). A per-file failure (missing file)
  // comes back from reap() as an error; a throw here means the source itself is broken.
  virtual void submit(const ReadRequest& request);
  // Waits up to timeout_ms for at least one completion and appends up to `max` to `out`;
  // returns how many (0 on time-out). Throws only when the source is broken (ring, server).
  virtual size_t reap(std::vector<ReadCompletion>& out, size_t max, int timeout_ms);
};

// The source for a dataset: spec.options.kind, or, when automatic, from the dataset and
// whether the reader submits reads (SourceSpec::queue_depth). Throws naming the dataset when
// the kind cannot serve it (io_uring over nfs://, say), or when io_uring is missing.
std::unique_ptr<Source> make_source(const SourceSpec& spec);

// Hooks filled by their own files; until then the stubs fail with the reason.
std::unique_ptr<Source> make_nfs_source(const SourceSpec& spec);     // source_nfs.cc (or its stub)
std::unique_ptr<Source> make_shards_source(const SourceSpec& spec);  // source_shards.cc
// The built-in ones.
std::unique_ptr<Source> make_pread_source(const SourceOptions& options);
// queue_depth: as SourceSpec's (0: the source's default).
std::unique_ptr<Source> make_uring_source(const SourceOptions& options,
                                          uint32_t queue_depth = 0);  // throws without io_uring
std::unique_ptr<Source> make_null_source(const SourceOptions& options, uint32_t queue_depth = 0);

// The bytes the null source serves by default: a valid 256x256 baseline JPEG, made once.
std::span<const uint8_t> null_source_jpeg();

// Reads all of `path` into buf (grown, never shrunk): pread of a local whole file. With
// `evict`, drops it from the page cache afterwards. Throws naming the file.
std::span<const uint8_t> read_file(const std::string& path, std::vector<uint8_t>& buf,
                                   bool evict = false);

// posix_fadvise(DONTNEED) on the local file `path`, so its next read comes from storage.
// False when it could not be evicted: missing, unreadable, or still in the page cache
// afterwards (tmpfs, say; checked with cachestat(2) or mincore(2)). A dataset's files:
// evict_from_page_cache(Index) in index/index.h.
bool evict_file_from_page_cache(const std::string& path);

}  // namespace stoker
