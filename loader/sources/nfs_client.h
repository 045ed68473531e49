// SPDX-License-Identifier: Apache-2.0
// A userspace NFSv3 client for one thread, on libnfs's asynchronous API: mount, list a
// directory, stat, and reads with many requests in flight, driven by poll() on libnfs's
// socket and nfs_service(). Not thread-safe (nor are libnfs contexts): one NfsClient per
// thread or process. Every wait is bounded: no answer from the server for `timeout_ms`, or
// a lost connection, is a SourceBroken naming the URL, the server and the file being read.
// A shorter silence (a link down for a few seconds: TCP retransmits) is waited out and said
// once it ends (log_warning, counted in stalls()). No RPC of our own: libnfs does it.
// Range reads (shard members) that run forward through a file are served from read-ahead
// windows: large READs of the bytes that follow, at most kAheadWindows of them per client.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "loader/sources/nfs_url.h"

struct nfs_context;
struct nfsfh;

namespace stoker {

constexpr int kNfsDefaultTimeoutMs = 10000;

struct NfsEntry {
  enum class Type : uint8_t { file, dir, link, other };
  std::string name;
  Type type = Type::other;
  uint64_t size = 0;
};

class NfsClient {
 public:
  static constexpr uint64_t kWholeFile = UINT64_MAX;

  // Where a read's bytes go: reserve(self, n) returns room for n bytes; earlier contents
  // need not be kept (the client stages multi-chunk reads itself).
  struct Sink {
    uint8_t* (*reserve)(void* self, size_t bytes) = nullptr;
    void* self = nullptr;
  };
  struct Read {
    uint64_t tag = 0;
    std::string path;  // relative to the URL's path ("cls/x.jpg"); "" is the URL itself
    uint64_t offset = 0;
    uint64_t length = kWholeFile;  // kWholeFile: from offset to the end of the file as it is
    Sink sink;
  };
  struct Done {
    uint64_t tag = 0;
    const uint8_t* data = nullptr;  // from the read's sink
    size_t bytes = 0;
    int64_t read_ns = 0;  // submit to completion
    std::string error;    // empty: success; else why, naming the file's URL
  };

  // Mounts the export that holds url.path: the longest prefix of it the server exports
  // (so a URL may point below an export, or at a file in one). Throws naming the URL.
  explicit NfsClient(const NfsUrl& url, int timeout_ms = kNfsDefaultTimeoutMs);
  ~NfsClient();
  NfsClient(const NfsClient&) = delete;
  NfsClient& operator=(const NfsClient&) = delete;

  const NfsUrl& url() const { return url_; }

  // Synchronous, each one request through the same bounded loop. Errors name the URL.
  // The entries of directory `path` ("" = the URL itself), without "." and "..".
  std::vector<NfsEntry> list(std::string_view path);
  // Type and size of `path`, symbolic links followed.
  NfsEntry stat(std::string_view path);
  // All of the read's bytes (in its sink's memory). A per-file failure throws too.
  std::span<const uint8_t> read(const Read& r);

  // Asynchronous. submit() queues a read (open, READs, close; no limit here: the caller
  // bounds what it has in flight). reap() drives the connection until at least one read
  // has completed or `timeout_ms` passed, and moves up to `max` completions to `out`.
  // A per-file failure (missing, unreadable) is a Done with an error; a server that stops
  // answering or a lost connection throws, and the client stays broken.
  void submit(const Read& r);
  size_t reap(std::vector<Done>& out, size_t max, int timeout_ms);
  size_t in_flight() const { return in_flight_; }

  // Silences of kStallNoteMs or more that ended with an answer (the connection survived).
  size_t stalls() const { return stalls_; }
  // Range reads served from read-ahead windows, and the windows read.
  uint64_t ahead_hits() const { return ahead_hits_; }
  uint64_t ahead_windows() const { return ahead_windows_; }
  size_t windows_held() const { return windows_; }  // at most kAheadWindows

  static constexpr int kStallNoteMs = 1000;
  // Read-ahead: a forward range read within kRunGap of the previous one's end continues a
  // run (as the local shards source decides), and a run keeps the next kAhead bytes asked
  // for; kAheadWindows windows per client bound the memory (kAheadWindows x kAhead).
  static constexpr uint64_t kRunGap = 1 << 20;
  static constexpr uint64_t kAhead = 4 << 20;
  static constexpr size_t kAheadWindows = 4;

  struct Op;        // one read in progress (nfs_client.cc)
  struct OpenFile;  // a file kept open for range reads
  struct Window;    // read-ahead bytes of an OpenFile

 private:
  friend struct NfsCallbacks;
  void connect();
  std::string mount_path(std::string_view rel) const;
  // One poll()/nfs_service() round of at most `wait_ms`; throws if the connection broke or
  // nothing has answered for timeout_ms_ while requests are outstanding.
  void pump(int wait_ms);
  void run_until(const bool& done, std::string_view what);
  [[noreturn]] void broken(const std::string& why);
  // What the client was doing, for errors and notes: "reading URL (and 3 more reads)".
  std::string activity() const;
  std::string describe(const Op& op) const;  // its URL, and its bytes for a range
  // host:port of the NFS service (the URL's nfsport=), or the host alone.
  std::string server_text() const;
  // Called with each answer: says so when it ends a silence of kStallNoteMs or more.
  void note_answer();
  // Range reads: from a read-ahead window when one holds (or will hold) the bytes, then
  // the run's next window asked for. False: read it from the server.
  bool serve_from_window(Op& op, OpenFile& file);
  void read_ahead(OpenFile& file, uint64_t offset, uint64_t length);
  void window_done(Window& w, int err, const uint8_t* data, uint64_t n);
  void start(Op& op);
  void finish(Op& op, std::string error);
  // Closes cached handles nobody uses once kMaxOpenFiles are open.
  void close_idle_files();
  static constexpr size_t kMaxOpenFiles = 64;

  NfsUrl url_;
  int timeout_ms_;
  nfs_context* nfs_ = nullptr;
  std::string export_;  // what was mounted
  std::string prefix_;  // url.path below the export ("" or "/sub/dir")
  uint64_t read_max_ = 0;
  std::string broken_;  // non-empty once the connection failed: every call throws it
  int64_t last_answer_ns_ = 0;
  int64_t last_pump_ns_ = 0;  // end of the previous pump(): time between is not the server's
  int64_t quiet_since_ = 0;   // when this client last began listening for answers
  size_t stalls_ = 0;
  uint64_t ahead_hits_ = 0;
  uint64_t ahead_windows_ = 0;
  size_t windows_ = 0;        // windows held, all files (at most kAheadWindows)
  std::string sync_what_;     // the synchronous request in progress ("listing URL")
  size_t failed_now_ = 0;     // reads failed in this pump() (a dropped connection fails all)
  std::string failed_first_;  // the first of them
  size_t pending_rpcs_ = 0;   // callbacks libnfs still owes us (sync helpers included)
  size_t in_flight_ = 0;
  std::vector<std::unique_ptr<Op>> ops_;
  std::vector<Op*> free_ops_;
  std::deque<Op*> completed_;
  // Range reads (shard members) keep their file open: one OPEN per shard, not per sample.
  std::unordered_map<std::string, std::unique_ptr<OpenFile>> open_files_;
};

}  // namespace stoker
