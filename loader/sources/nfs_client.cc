// SPDX-License-Identifier: Apache-2.0
// libnfs 4 (Debian 12) asynchronous calls; each callback runs inside nfs_service() on the
// client's own thread. A whole-file read is open -> READ chunks of the server's maximum
// until a short one (libnfs returns short only at end of file) -> close; a range read
// (shards) is one pread of that length, which libnfs splits into READs as needed, on a
// handle kept open for the file's other members, or a copy out of a read-ahead window (one
// pread of the kAhead bytes after a forward run of members, as the local shards source
// asks the kernel for).
#include "loader/sources/nfs_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/time.h>  // libnfs.h uses struct timeval without including it

#include <nfsc/libnfs.h>

#ifdef LIBNFS_API_V2
// libnfs 5 reads into the caller's buffer (nfs_pread_async(nfs, fh, buf, count, offset, ...))
// instead of handing one to the callback: read_cb below would have to change with it.
#error "libnfs 5 (LIBNFS_API_V2) is not supported yet; build with libnfs 4 or -DSTOKER_WITH_NFS=OFF"
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"
#include "loader/sources/nfs_client_internal.h"
#include "loader/sources/source.h"

namespace stoker {

namespace {

// nfs_get_error() may return NULL when libnfs has nothing to say.
std::string last_error(nfs_context* n) {
  const char* e = nfs_get_error(n);
  return e && *e ? e : "closed by the server";
}

std::string error_text(int err, void* data) {
  return data ? static_cast<const char*>(data) : strerror(-err);
}

}  // namespace

// The C callbacks (nfs_client_internal.h), friends of NfsClient.
void NfsCallbacks::answered(NfsClient& c) {
  c.note_answer();
  --c.pending_rpcs_;
}

void NfsCallbacks::close_cb(int, nfs_context*, void*, void* priv) {
  auto* c = static_cast<NfsClient*>(priv);
  if (c->nfs_) answered(*c);
}

void NfsCallbacks::close_file(NfsClient::Op& op) {
  NfsClient& c = *op.client;
  nfsfh* fh = std::exchange(op.fh, nullptr);
  if (NfsClient::OpenFile* f = std::exchange(op.shared, nullptr)) {
    --f->users;
    return;
  }
  if (!fh) return;
  // NFSv3 has no CLOSE: libnfs frees the handle, possibly answering at once.
  ++c.pending_rpcs_;
  if (nfs_close_async(c.nfs_, fh, close_cb, &c) != 0) --c.pending_rpcs_;
}

void NfsCallbacks::read_cb(int err, nfs_context*, void* data, void* priv) {
  auto& op = *static_cast<NfsClient::Op*>(priv);
  NfsClient& c = *op.client;
  if (!c.nfs_) return;  // the context is being destroyed
  answered(c);
  if (err < 0) {
    close_file(op);
    c.finish(op, fmt::format("read failed at byte {}: {}", op.read.offset + op.got,
                             data ? static_cast<const char*>(data) : strerror(-err)));
    return;
  }
  const auto n = static_cast<uint64_t>(err);
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (op.read.length != NfsClient::kWholeFile) {
    // A range: libnfs gathered all of it, or the file is shorter than the index says.
    close_file(op);
    if (n != op.read.length) {
      c.finish(op, fmt::format("{} bytes at offset {} expected, {} found (file truncated?)",
                               op.read.length, op.read.offset, n));
      return;
    }
    uint8_t* dst = op.read.sink.reserve(op.read.sink.self, n);
    std::memcpy(dst, bytes, n);
    op.data = dst;
    op.got = n;
    c.finish(op, {});
    return;
  }
  if (op.got == 0 && n < op.chunk) {  // the common case: the whole file in one READ
    close_file(op);
    uint8_t* dst = op.read.sink.reserve(op.read.sink.self, std::max<uint64_t>(n, 1));
    std::memcpy(dst, bytes, n);
    op.data = dst;
    op.got = n;
    c.finish(op, {});
    return;
  }
  op.staging.insert(op.staging.end(), bytes, bytes + n);
  op.got += n;
  if (n == op.chunk) {  // maybe more: ask for the next chunk
    ++c.pending_rpcs_;
    if (nfs_pread_async(c.nfs_, op.fh, op.read.offset + op.got, op.chunk, read_cb, &op) != 0) {
      --c.pending_rpcs_;
      close_file(op);
      c.finish(op, fmt::format("cannot queue a READ: {}", last_error(c.nfs_)));
    }
    return;
  }
  close_file(op);
  uint8_t* dst = op.read.sink.reserve(op.read.sink.self, op.got);
  std::memcpy(dst, op.staging.data(), op.got);
  op.data = dst;
  op.staging.clear();
  c.finish(op, {});
}

void NfsCallbacks::open_cb(int err, nfs_context*, void* data, void* priv) {
  auto& op = *static_cast<NfsClient::Op*>(priv);
  NfsClient& c = *op.client;
  if (!c.nfs_) {
    // Being destroyed: a handle opened now would leak in libnfs otherwise.
    return;
  }
  answered(c);
  if (err < 0) {
    c.finish(op, fmt::format("cannot open: {}", error_text(err, data)));
    return;
  }
  op.fh = static_cast<nfsfh*>(data);
  start_read(op);
}

void NfsCallbacks::start_read(NfsClient::Op& op) {
  NfsClient& c = *op.client;
  op.chunk = op.read.length == NfsClient::kWholeFile ? c.read_max_ : op.read.length;
  if (op.chunk == 0) {  // an empty member: nothing to ask the server
    close_file(op);
    op.data = op.read.sink.reserve(op.read.sink.self, 1);
    c.finish(op, {});
    return;
  }
  ++c.pending_rpcs_;
  if (nfs_pread_async(c.nfs_, op.fh, op.read.offset, op.chunk, read_cb, &op) != 0) {
    --c.pending_rpcs_;
    close_file(op);
    c.finish(op, fmt::format("cannot queue a READ: {}", last_error(c.nfs_)));
  }
}

void NfsCallbacks::shared_open_cb(int err, nfs_context*, void* data, void* priv) {
  auto& f = *static_cast<NfsClient::OpenFile*>(priv);
  NfsClient& c = *f.waiting.front()->client;
  if (!c.nfs_) return;
  answered(c);
  f.opening = false;
  std::vector<NfsClient::Op*> waiting;
  waiting.swap(f.waiting);
  if (err < 0) {
    const std::string why = fmt::format("cannot open: {}", error_text(err, data));
    for (NfsClient::Op* op : waiting) {
      op->shared = nullptr;
      c.finish(*op, why);
    }
    c.open_files_.erase(f.path);  // a later read tries again
    return;
  }
  f.fh = static_cast<nfsfh*>(data);
  for (NfsClient::Op* op : waiting) {
    op->fh = f.fh;
    start_read(*op);
  }
}

void NfsCallbacks::sync_call(NfsClient& c, std::string_view rel, const char* what,
                             int (*start)(nfs_context*, const char*, nfs_cb, void*),
                             SyncCall& call) {
  if (!c.broken_.empty()) throw SourceBroken(c.broken_);
  const std::string path = c.mount_path(rel);
  c.sync_what_ = fmt::format("{} {}", std::string_view(what) == "list" ? "listing" : "looking up",
                             c.url_.join(rel));
  ++c.pending_rpcs_;
  if (c.pending_rpcs_ == 1) c.last_answer_ns_ = now_ns();
  if (start(c.nfs_, path.c_str(), sync_answered, &call) != 0) {
    --c.pending_rpcs_;
    fail("{}: cannot {}: {}", c.url_.join(rel), what, last_error(c.nfs_));
  }
  c.run_until(call.done, what);
  c.sync_what_.clear();
}

void NfsCallbacks::sync_answered(int err, nfs_context* n, void* data, void* priv) {
  auto& s = *static_cast<SyncCall*>(priv);
  if (!s.client->nfs_) return;
  answered(*s.client);
  s.done = true;
  s.err = err;
  if (err < 0) {
    s.error = error_text(err, data);
    return;
  }
  s.on_data(s, n, data);
}

namespace {

NfsEntry::Type type_of_mode(uint64_t mode) {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return NfsEntry::Type::file;
    case S_IFDIR:
      return NfsEntry::Type::dir;
    case S_IFLNK:
      return NfsEntry::Type::link;
    default:
      return NfsEntry::Type::other;
  }
}

}  // namespace

NfsClient::NfsClient(const NfsUrl& url, int timeout_ms) : url_(url), timeout_ms_(timeout_ms) {
  connect();
}

void NfsClient::close_idle_files() {
  if (open_files_.size() < kMaxOpenFiles) return;
  for (auto it = open_files_.begin(); it != open_files_.end();) {
    OpenFile& f = *it->second;
    if (f.users == 0 && !f.opening) {
      windows_ -= f.windows.size();
      nfs_close_async(
          nfs_, f.fh, [](int, nfs_context*, void*, void*) {}, nullptr);
      it = open_files_.erase(it);
    } else {
      ++it;
    }
  }
}

NfsClient::~NfsClient() {
  nfs_context* n = std::exchange(nfs_, nullptr);  // callbacks fired from here do nothing
  if (!n) return;
  for (auto& [path, f] : open_files_) {
    if (f->fh)
      nfs_close_async(
          n, f->fh, [](int, nfs_context*, void*, void*) {}, nullptr);
  }
  for (auto& op : ops_) {
    if (op->fh && !op->shared)
      nfs_close_async(
          n, std::exchange(op->fh, nullptr), [](int, nfs_context*, void*, void*) {}, nullptr);
  }
  nfs_destroy_context(n);
}

namespace {

struct MountCall {
  bool done = false;
  int err = 0;
  std::string error;
};

// The reason in a failure's message without the URL that broken() puts in front of it.
std::string mount_failure(const std::string& what, const std::string& url) {
  const std::string prefix = url + ": ";
  std::string why = what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
  const std::string lost = "lost the connection to the NFS server: ";
  if (why.rfind(lost, 0) == 0) why = "connecting failed: " + why.substr(lost.size());
  return why;
}

}  // namespace

void NfsClient::connect() {
  const std::string text = url_.text();
  // The export is the longest prefix of the path the server accepts: try the path itself,
  // then each parent. A fresh context per attempt (a failed mount leaves its own state).
  std::string candidate = url_.path;
  std::vector<std::string> refusals;
  while (true) {
    nfs_context* n = nfs_init_context();
    if (!n) fail("{}: cannot create an NFS context (out of memory?)", text);
    // Our deadline decides; libnfs must not reconnect behind our back (URL args may say so).
    nfs_set_autoreconnect(n, 0);
    // Nor time RPCs out itself (-1, libnfs 4's default, said here on purpose): a timed-out
    // READ would come back as that one file's error, which --on-error could skip; a server
    // that does not answer is the storage failing, and pump()'s deadline says so.
    nfs_set_timeout(n, -1);
    nfs_url* parsed = nfs_parse_url_dir(n, text.c_str());
    if (!parsed) {
      const std::string why = last_error(n);
      nfs_destroy_context(n);
      fail("{}: not a URL libnfs accepts: {}", text, why);
    }
    nfs_destroy_url(parsed);
    nfs_ = n;
    MountCall call;
    ++pending_rpcs_;
    last_answer_ns_ = now_ns();
    const int rc = nfs_mount_async(
        n, url_.server.c_str(), candidate.c_str(),
        [](int err, nfs_context*, void* data, void* priv) {
          auto& m = *static_cast<MountCall*>(priv);
          m.done = true;
          m.err = err;
          if (err < 0) m.error = error_text(err, data);
        },
        &call);
    if (rc != 0) {
      const std::string why = last_error(n);
      nfs_ = nullptr;
      nfs_destroy_context(n);
      fail("{}: cannot start mounting {}:{}: {}", text, url_.server, candidate, why);
    }
    try {
      run_until(call.done, "mount");
      pending_rpcs_ = 0;
    } catch (const Error& e) {
      nfs_ = nullptr;
      pending_rpcs_ = 0;
      broken_.clear();
      nfs_destroy_context(n);
      // Nothing was mounted yet: a socket that fails here (POLLHUP on a refused connect,
      // with ?nfsport=&mountport= and no portmapper to ask) never reached a server, so
      // "lost the connection" would mislead. Say what was tried, and the likely cause.
      throw SourceBroken(fmt::format(
          "{}: cannot mount {}: no NFS server answered at {} ({}; is an NFS server exporting "
          "it running there, on those ports? scripts/nfs_serve.sh starts one)",
          text, candidate, url_.server, mount_failure(e.what(), text)));
    }
    if (call.err == 0) {
      export_ = candidate;
      prefix_ = url_.path.substr(candidate == "/" ? 0 : candidate.size());
      read_max_ = std::max<uint64_t>(nfs_get_readmax(n), 4096);
      return;
    }
    nfs_ = nullptr;
    nfs_destroy_context(n);
    refusals.push_back(candidate + ": " + call.error);
    // Only a refusal of this path moves up a level; a server that is not there ends here.
    const bool refused = call.err == -EACCES || call.err == -ENOENT || call.err == -ENOTDIR ||
                         call.error.find("MNT3ERR") != std::string::npos;
    if (!refused || candidate == "/") break;
    const size_t slash = candidate.rfind('/');
    candidate = slash == 0 ? "/" : candidate.substr(0, slash);
  }
  // No server, or none exporting this: the storage, not a sample (so a SourceBroken).
  throw SourceBroken(
      fmt::format("{}: cannot mount: {} (is an NFS server exporting it running there? "
                  "scripts/nfs_serve.sh starts one)",
                  text, refusals.empty() ? "?" : refusals.front()));
}

std::string NfsClient::mount_path(std::string_view rel) const {
  std::string p = prefix_;
  p += '/';
  p += rel;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

void NfsClient::broken(const std::string& why) {
  // Once mounted, the server and what was being read (connect() words its own failures).
  const std::string doing = export_.empty() ? std::string() : activity();
  broken_ = export_.empty() ? fmt::format("{}: {}", url_.text(), why)
                            : fmt::format("{}: {} (NFS server {}{}{})", url_.text(), why,
                                          server_text(), doing.empty() ? "" : ", while ", doing);
  throw SourceBroken(broken_);
}

std::string NfsClient::server_text() const {
  const std::string key = "nfsport=";
  for (size_t at = url_.args.find(key); at != std::string::npos; at = url_.args.find(key, at + 1)) {
    if (at == 0 || url_.args[at - 1] == '&') {
      const size_t end = url_.args.find('&', at);
      return url_.server + ":" + url_.args.substr(at + key.size(), end - at - key.size());
    }
  }
  return url_.server;  // the port its portmapper gave
}

std::string NfsClient::describe(const Op& op) const {
  std::string s = url_.join(op.read.path);
  if (op.read.length != kWholeFile)
    s += fmt::format(" (bytes {} to {})", op.read.offset, op.read.offset + op.read.length);
  return s;
}

std::string NfsClient::activity() const {
  if (!sync_what_.empty()) return sync_what_;
  const Op* first = nullptr;
  size_t n = 0;
  for (const auto& op : ops_) {
    if (op->done) continue;
    ++n;
    if (!first || op->t0 < first->t0) first = op.get();
  }
  // libnfs fails every request in flight as it drops the connection: those were the reads.
  if (!first && failed_now_ == 0) return {};
  std::string s = "reading " + (first ? describe(*first) : failed_first_);
  n += failed_now_;
  if (n > 1) s += fmt::format(" and {} other read{}", n - 1, n == 2 ? "" : "s");
  return s;
}

void NfsClient::note_answer() {
  const int64_t now = now_ns();
  // Silent since the last answer or since we last began listening, whichever is later: a
  // caller busy elsewhere is not the server's silence.
  const int64_t silent_ns = now - std::max(last_answer_ns_, quiet_since_);
  last_answer_ns_ = now;
  if (pending_rpcs_ == 0 || silent_ns < int64_t{kStallNoteMs} * 1000000) return;
  ++stalls_;
  log_warning(fmt::format(
      "{}: the NFS server {} answered again after {:.1f} s of silence, while {} (TCP "
      "retransmitted: the connection held; stall {} of this connection; {:.0f} s of silence "
      "stop the run)",
      url_.text(), server_text(), silent_ns / 1e9, activity(), stalls_, timeout_ms_ / 1e3));
}

void NfsClient::pump(int wait_ms) {
  if (!broken_.empty()) throw SourceBroken(broken_);
  const int64_t began = now_ns();
  if (began - last_pump_ns_ > 500'000'000) quiet_since_ = began;
  failed_now_ = 0;
  const int fd = nfs_get_fd(nfs_);
  if (fd < 0) broken("the connection to the NFS server is closed");
  pollfd p{fd, static_cast<short>(nfs_which_events(nfs_)), 0};
  // Short polls: libnfs's own timers run from nfs_service(), and our deadline is checked.
  const int r = poll(&p, 1, std::clamp(wait_ms, 0, 100));
  if (r < 0 && errno != EINTR) broken(fmt::format("poll on the NFS socket: {}", errno_text(errno)));
  if (nfs_service(nfs_, r > 0 ? p.revents : 0) < 0) {
    broken(fmt::format("lost the connection to the NFS server: {}", last_error(nfs_)));
  }
  if (pending_rpcs_ > 0 && now_ns() - last_answer_ns_ > int64_t{timeout_ms_} * 1000000) {
    broken(fmt::format("no answer from the NFS server for {:.0f} s ({} requests outstanding)",
                       timeout_ms_ / 1e3, pending_rpcs_));
  }
  last_pump_ns_ = now_ns();
}

void NfsClient::run_until(const bool& done, std::string_view) {
  while (!done) pump(100);
}

namespace {

// sync_call's on_data for a listing: the entries of the opened directory.
void take_entries(SyncCall& s, nfs_context* n, void* data) {
  auto* dir = static_cast<nfsdir*>(data);
  while (nfsdirent* e = nfs_readdir(n, dir)) {
    if (std::strcmp(e->name, ".") == 0 || std::strcmp(e->name, "..") == 0) continue;
    NfsEntry out;
    out.name = e->name;
    // NF3REG 1, NF3DIR 2, NF3LNK 5; 0 when READDIRPLUS brought no attributes, which
    // callers resolve with stat() as they do links.
    out.type = e->type == 1                   ? NfsEntry::Type::file
               : e->type == 2                 ? NfsEntry::Type::dir
               : e->type == 5 || e->type == 0 ? NfsEntry::Type::link
                                              : NfsEntry::Type::other;
    out.size = e->size;
    s.entries.push_back(std::move(out));
  }
  nfs_closedir(n, dir);
}

// sync_call's on_data for a stat: the entry's type and size.
void take_stat(SyncCall& s, nfs_context*, void* data) {
  const auto* st = static_cast<const nfs_stat_64*>(data);
  s.entry.type = type_of_mode(st->nfs_mode);
  s.entry.size = st->nfs_size;
}

}  // namespace

std::vector<NfsEntry> NfsClient::list(std::string_view rel) {
  SyncCall call{this, take_entries};
  NfsCallbacks::sync_call(*this, rel, "list", nfs_opendir_async, call);
  if (call.err < 0) fail("{}: cannot list directory: {}", url_.join(rel), call.error);
  return std::move(call.entries);
}

NfsEntry NfsClient::stat(std::string_view rel) {
  SyncCall call{this, take_stat};
  NfsCallbacks::sync_call(*this, rel, "stat", nfs_stat64_async, call);
  if (call.err < 0) fail("{}: {}", url_.join(rel), call.error);
  const size_t slash = rel.rfind('/');
  call.entry.name = rel.substr(slash == std::string_view::npos ? 0 : slash + 1);
  return call.entry;
}

void NfsClient::submit(const Read& r) {
  if (!broken_.empty()) throw SourceBroken(broken_);
  Op* op;
  if (free_ops_.empty()) {
    ops_.push_back(std::make_unique<Op>());
    op = ops_.back().get();
    op->client = this;
  } else {
    op = free_ops_.back();
    free_ops_.pop_back();
  }
  op->read = r;
  op->path = mount_path(r.path);
  op->fh = nullptr;
  op->shared = nullptr;
  op->got = 0;
  op->data = nullptr;
  op->done = false;
  op->error.clear();
  op->staging.clear();
  op->t0 = now_ns();
  ++in_flight_;
  start(*op);
}

void NfsClient::start(Op& op) {
  if (pending_rpcs_ == 0) last_answer_ns_ = now_ns();
  if (op.read.length != kWholeFile) {
    auto it = open_files_.find(op.path);
    if (it == open_files_.end()) {
      close_idle_files();
      auto f = std::make_unique<OpenFile>();
      f->path = op.path;
      it = open_files_.emplace(op.path, std::move(f)).first;
      OpenFile& file = *it->second;
      file.waiting.push_back(&op);
      ++file.users;
      op.shared = &file;
      ++pending_rpcs_;
      if (nfs_open_async(nfs_, op.path.c_str(), O_RDONLY, NfsCallbacks::shared_open_cb, &file) !=
          0) {
        --pending_rpcs_;
        op.shared = nullptr;
        open_files_.erase(it);
        finish(op, fmt::format("cannot queue an OPEN: {}", last_error(nfs_)));
      }
      return;
    }
    OpenFile& file = *it->second;
    ++file.users;
    op.shared = &file;
    const uint64_t offset = op.read.offset, length = op.read.length;
    if (file.opening) {
      file.waiting.push_back(&op);
    } else if (!serve_from_window(op, file)) {
      op.fh = file.fh;
      NfsCallbacks::start_read(op);
    }
    read_ahead(file, offset, length);
    return;
  }
  ++pending_rpcs_;
  if (nfs_open_async(nfs_, op.path.c_str(), O_RDONLY, NfsCallbacks::open_cb, &op) != 0) {
    --pending_rpcs_;
    finish(op, fmt::format("cannot queue an OPEN: {}", last_error(nfs_)));
  }
}

void NfsClient::finish(Op& op, std::string error) {
  op.done = true;
  if (!error.empty() && failed_now_++ == 0) failed_first_ = describe(op);
  if (!error.empty()) op.error = fmt::format("{}: {}", url_.join(op.read.path), error);
  completed_.push_back(&op);
}

size_t NfsClient::reap(std::vector<Done>& out, size_t max, int timeout_ms) {
  // Reads that failed with the connection are not files' errors: the client is broken.
  if (!broken_.empty()) throw SourceBroken(broken_);
  const int64_t until = now_ns() + int64_t{std::max(timeout_ms, 0)} * 1000000;
  while (completed_.empty()) {
    const int64_t left_ms = (until - now_ns()) / 1000000;
    pump(static_cast<int>(std::max<int64_t>(left_ms, 0)));
    if (!completed_.empty() || now_ns() >= until || in_flight_ == 0) break;
  }
  size_t n = 0;
  while (n < max && !completed_.empty()) {
    Op* op = completed_.front();
    completed_.pop_front();
    Done d;
    d.tag = op->read.tag;
    d.data = op->data;
    d.bytes = op->error.empty() ? op->got : 0;
    d.read_ns = now_ns() - op->t0;
    d.error = std::move(op->error);
    out.push_back(std::move(d));
    free_ops_.push_back(op);
    --in_flight_;
    ++n;
  }
  return n;
}

std::span<const uint8_t> NfsClient::read(const Read& r) {
  if (!broken_.empty()) throw SourceBroken(broken_);
  STOKER_CHECK_MSG(in_flight_ == 0, "NfsClient::read with asynchronous reads in flight");
  submit(r);
  std::vector<Done> done;
  while (reap(done, 1, timeout_ms_) == 0) {
  }
  if (!done[0].error.empty()) throw Error(done[0].error);
  return {done[0].data, done[0].bytes};
}

}  // namespace stoker
