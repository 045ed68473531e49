// SPDX-License-Identifier: Apache-2.0
// NfsClient's insides, shared by its two files: nfs_client.cc (connection, reads, errors) and
// nfs_client_ahead.cc (read-ahead windows for range reads). Not for other code.
#pragma once

#include <sys/time.h>  // libnfs.h uses struct timeval without including it

#include <nfsc/libnfs.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loader/sources/nfs_client.h"

namespace stoker {

// One synchronous request (list, stat) in flight: NfsCallbacks::sync_call issues it,
// sync_answered records the answer and hands a success's data to `on_data`.
struct SyncCall {
  NfsClient* client = nullptr;
  void (*on_data)(SyncCall& call, nfs_context* n, void* data) = nullptr;
  bool done = false;
  int err = 0;
  std::string error;
  std::vector<NfsEntry> entries;
  NfsEntry entry;
};

// A file kept open for range reads (shards): opened once, shared by the reads of its members.
struct NfsClient::OpenFile {
  std::string path;
  nfsfh* fh = nullptr;
  bool opening = true;
  size_t users = 0;                     // reads using or waiting for the handle, windows read
  std::vector<NfsClient::Op*> waiting;  // reads queued while it opens
  uint64_t last_end = 0;                // end of the previous range read: runs
  uint64_t ahead_end = 0;               // end of the last window asked for
  std::vector<std::unique_ptr<NfsClient::Window>> windows;
};

// kAhead bytes at `offset` of a file, read ahead of a forward run of range reads.
struct NfsClient::Window {
  NfsClient* client = nullptr;
  NfsClient::OpenFile* file = nullptr;
  uint64_t offset = 0;
  uint64_t asked = 0;
  uint64_t seq = 0;    // when it was asked for: the oldest goes first
  bool ready = false;  // bytes holds what the server gave (short at the end of the file)
  std::vector<uint8_t> bytes;
  std::vector<NfsClient::Op*> waiting;  // range reads inside it, asked before it came
  bool holds(uint64_t off, uint64_t len) const {
    const uint64_t end = offset + (ready ? bytes.size() : asked);
    return off >= offset && off <= end && len <= end - off;
  }
};

struct NfsClient::Op {
  NfsClient* client = nullptr;
  Read read;
  std::string path;  // relative to the mounted export
  nfsfh* fh = nullptr;
  NfsClient::OpenFile* shared = nullptr;  // range reads: the cached handle fh belongs to
  uint64_t got = 0;
  uint64_t chunk = 0;
  std::vector<uint8_t> staging;  // multi-chunk whole-file reads only
  const uint8_t* data = nullptr;
  int64_t t0 = 0;
  bool done = false;
  std::string error;
};

// The C callbacks, friends of NfsClient: each runs inside nfs_service() on the client's thread.
struct NfsCallbacks {
  // Every answer goes through here (stalls, the deadline).
  static void answered(NfsClient& c);
  static void close_cb(int err, nfs_context* n, void* data, void* priv);
  // A read is done with its handle: a shared one loses a user, an own one is closed.
  static void close_file(NfsClient::Op& op);
  static void read_cb(int err, nfs_context* n, void* data, void* priv);
  static void open_cb(int err, nfs_context* n, void* data, void* priv);
  // The READ of an op whose file is open (op.fh).
  static void start_read(NfsClient::Op& op);
  static void shared_open_cb(int err, nfs_context* n, void* data, void* priv);
  // The one path of every synchronous request: `start` (nfs_opendir_async, nfs_stat64_async)
  // queues it for `rel` with sync_answered as its callback; waits for the answer. Throws
  // "URL: cannot WHAT" when it cannot be queued, SourceBroken when the connection is; else
  // returns with call.err and call.error (or on_data's result) set.
  static void sync_call(NfsClient& c, std::string_view rel, const char* what,
                        int (*start)(nfs_context*, const char*, nfs_cb, void*), SyncCall& call);
  static void sync_answered(int err, nfs_context* n, void* data, void* priv);
  // Read-ahead (nfs_client_ahead.cc): a window's READ answered; a range read served from
  // bytes in memory (a window's).
  static void window_cb(int err, nfs_context* n, void* data, void* priv);
  static void serve(NfsClient::Op& op, const uint8_t* bytes);
};

}  // namespace stoker
