// SPDX-License-Identifier: Apache-2.0
// NfsClient's read-ahead for range reads (shard members), as the local shards source reads
// ahead: a forward run of range reads in one file gets the next kAhead bytes asked for in
// one pread (libnfs splits it at the server's largest READ) each time it nears the end of
// what was asked; reads inside a window are copies from it, or wait for it while it is read.
// Random reads ask for nothing. At most kAheadWindows windows per client.
#include <algorithm>
#include <cstring>

#include "common/clock.h"
#include "loader/sources/nfs_client_internal.h"

namespace stoker {

void NfsCallbacks::window_cb(int err, nfs_context*, void* data, void* priv) {
  auto& w = *static_cast<NfsClient::Window*>(priv);
  NfsClient& c = *w.client;
  if (!c.nfs_) return;
  answered(c);
  c.window_done(w, err, static_cast<const uint8_t*>(data), err > 0 ? uint64_t(err) : 0);
}

void NfsCallbacks::serve(NfsClient::Op& op, const uint8_t* bytes) {
  NfsClient& c = *op.client;
  close_file(op);
  uint8_t* dst = op.read.sink.reserve(op.read.sink.self, std::max<uint64_t>(op.read.length, 1));
  std::memcpy(dst, bytes, op.read.length);
  op.data = dst;
  op.got = op.read.length;
  ++c.ahead_hits_;
  c.finish(op, {});
}

bool NfsClient::serve_from_window(Op& op, OpenFile& file) {
  for (const auto& w : file.windows) {
    if (!w->holds(op.read.offset, op.read.length)) continue;
    if (w->ready) {
      NfsCallbacks::serve(op, w->bytes.data() + (op.read.offset - w->offset));
    } else {
      w->waiting.push_back(&op);
    }
    return true;
  }
  return false;
}

// As the local shards source: random reads ask for nothing; a forward run gets the next
// kAhead bytes asked for each time it nears the end of what was asked. At most
// kAheadWindows windows in all: the oldest one read goes (pending ones are kept).
void NfsClient::read_ahead(OpenFile& f, uint64_t offset, uint64_t length) {
  const bool run = offset >= f.last_end && offset - f.last_end < kRunGap && f.last_end > 0;
  f.last_end = offset + length;
  if (!run || f.opening || f.last_end + kAhead / 2 < f.ahead_end) return;
  if (windows_ >= kAheadWindows) {
    Window* oldest = nullptr;
    for (const auto& [path, file] : open_files_)
      for (const auto& w : file->windows)
        if (w->ready && (!oldest || w->seq < oldest->seq)) oldest = w.get();
    if (!oldest) return;  // all still being read: no more memory for this one
    auto& ws = oldest->file->windows;
    ws.erase(std::find_if(ws.begin(), ws.end(), [&](const auto& w) { return w.get() == oldest; }));
    --windows_;
  }
  auto w = std::make_unique<Window>();
  w->client = this;
  w->file = &f;
  w->offset = std::max(f.ahead_end, f.last_end);
  w->asked = kAhead;
  w->seq = ahead_windows_;
  if (pending_rpcs_ == 0) last_answer_ns_ = now_ns();
  ++pending_rpcs_;
  if (nfs_pread_async(nfs_, f.fh, w->offset, w->asked, NfsCallbacks::window_cb, w.get()) != 0) {
    --pending_rpcs_;  // no read-ahead this time; the reads themselves still go
    return;
  }
  f.ahead_end = w->offset + w->asked;
  ++f.users;
  ++windows_;
  ++ahead_windows_;
  f.windows.push_back(std::move(w));
}

void NfsClient::window_done(Window& w, int err, const uint8_t* data, uint64_t n) {
  OpenFile& f = *w.file;
  --f.users;
  std::vector<Op*> waiting;
  waiting.swap(w.waiting);
  if (err >= 0) {
    w.bytes.assign(data, data + n);
    w.ready = true;
  }
  for (Op* op : waiting) {
    if (w.ready && w.holds(op->read.offset, op->read.length)) {
      NfsCallbacks::serve(*op, w.bytes.data() + (op->read.offset - w.offset));
    } else {  // past the end of the file, or the window failed: the read asks for itself
      op->fh = f.fh;
      NfsCallbacks::start_read(*op);
    }
  }
  if (!w.ready) {  // a failed window is forgotten (the reads report their own errors)
    auto it = std::find_if(f.windows.begin(), f.windows.end(),
                           [&](const auto& p) { return p.get() == &w; });
    f.windows.erase(it);
    --windows_;
  }
}

}  // namespace stoker
