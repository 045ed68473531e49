// SPDX-License-Identifier: Apache-2.0
#include "loader/process_pool/worker_protocol.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "loader/index/index.h"

namespace stoker {

namespace {

constexpr uint64_t kIndexMagic = 0x53544b494e444558;  // "STKINDEX"

size_t align8(size_t n) {
  return (n + 7) / 8 * 8;
}

}  // namespace

WireSourceOptions to_wire(const SourceOptions& options) {
  WireSourceOptions w;
  w.kind = options.kind;
  w.direct = options.direct;
  w.evict_after_read = options.evict_after_read;
  if (options.kind == SourceOptions::Kind::null) {
    const std::string& path = options.null_file;
    if (path.size() >= sizeof w.null_file) {
      fail("--null-file '{}': worker processes take a path of at most {} bytes, this one has {}",
           path, sizeof w.null_file - 1, path.size());
    }
    std::memcpy(w.null_file, path.data(), path.size());
  }
  return w;
}

SourceOptions from_wire(const WireSourceOptions& wire) {
  SourceOptions o;
  o.kind = wire.kind;
  o.direct = wire.direct;
  o.evict_after_read = wire.evict_after_read;
  o.null_file.assign(wire.null_file, strnlen(wire.null_file, sizeof wire.null_file));
  return o;
}

void SampleReply::set_reason(const std::string& text) {
  reason_size = static_cast<uint32_t>(std::min(text.size(), sizeof reason));
  std::memcpy(reason, text.data(), reason_size);
}

bool send_packet(int fd, const void* data, size_t size) {
  while (true) {
    if (send(fd, data, size, MSG_NOSIGNAL) == static_cast<ssize_t>(size)) return true;
    if (errno == EINTR) continue;
    if (errno == EPIPE || errno == ECONNRESET) return false;
    fail("worker socket: send failed: {}", errno_text(errno));
  }
}

ssize_t recv_packet(int fd, void* buf, size_t capacity, bool wait) {
  while (true) {
    const ssize_t n = recv(fd, buf, capacity, wait ? 0 : MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return -1;
    if (errno == ECONNRESET) return 0;
    fail("worker socket: receive failed: {}", errno_text(errno));
  }
}

namespace {

// Byte offsets of each part of the shared index, from its header.
struct IndexLayout {
  size_t name_offset, root, names, offset, length, shard, shard_name_offset, shard_names, end;
};

IndexLayout layout(const SharedIndexHeader& h) {
  IndexLayout l{};
  const bool sharded = h.shard_count > 0;
  l.name_offset = sizeof h;
  l.root = l.name_offset + h.count * sizeof(uint64_t);
  l.names = l.root + align8(h.root_size);
  l.offset = l.names + align8(h.names_size);
  l.length = l.offset + (sharded ? h.count * sizeof(uint64_t) : 0);
  l.shard = l.length + (sharded ? h.count * sizeof(uint64_t) : 0);
  l.shard_name_offset = l.shard + (sharded ? align8(h.count * sizeof(uint32_t)) : 0);
  l.shard_names = l.shard_name_offset + h.shard_count * sizeof(uint64_t);
  l.end = l.shard_names + h.shard_names_size;
  return l;
}

SharedIndexHeader header_of(const Index& index) {
  SharedIndexHeader h;
  h.magic = kIndexMagic;
  h.count = index.size();
  h.root_size = index.root.size();
  h.names_size = index.names.size();
  if (index.sharded()) {
    h.shard_count = index.shards.size();
    for (const std::string& s : index.shards) h.shard_names_size += s.size() + 1;
  }
  return h;
}

// The NUL-terminated string at `pos` of a pool of `size` bytes; false if it runs off the end.
bool pool_string(const char* pool, uint64_t size, uint64_t pos, std::string_view& out) {
  if (pos >= size) return false;
  const void* end = std::memchr(pool + pos, '\0', size - pos);
  if (!end) return false;
  out = {pool + pos, static_cast<const char*>(end)};
  return true;
}

}  // namespace

size_t shared_index_bytes(const Index& index) {
  return layout(header_of(index)).end;
}

void write_shared_index(const Index& index, void* dst) {
  const SharedIndexHeader h = header_of(index);
  const IndexLayout l = layout(h);
  char* p = static_cast<char*>(dst);
  std::memcpy(p, &h, sizeof h);
  std::memcpy(p + l.name_offset, index.name_offset.data(), h.count * sizeof(uint64_t));
  std::memcpy(p + l.root, index.root.data(), h.root_size);
  std::memcpy(p + l.names, index.names.data(), h.names_size);
  if (!index.sharded()) return;
  std::memcpy(p + l.offset, index.offset.data(), h.count * sizeof(uint64_t));
  std::memcpy(p + l.length, index.bytes.data(), h.count * sizeof(uint64_t));
  std::memcpy(p + l.shard, index.shard.data(), h.count * sizeof(uint32_t));
  uint64_t at = 0;
  for (size_t s = 0; s < index.shards.size(); ++s) {
    std::memcpy(p + l.shard_name_offset + s * sizeof(uint64_t), &at, sizeof at);
    std::memcpy(p + l.shard_names + at, index.shards[s].c_str(), index.shards[s].size() + 1);
    at += index.shards[s].size() + 1;
  }
}

SharedIndexView::SharedIndexView(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  header = static_cast<const SharedIndexHeader*>(data);
  if (size < sizeof *header || header->magic != kIndexMagic || size < layout(*header).end) {
    fail("the shared index ({} bytes) is not one written by this build of stoker", size);
  }
  const IndexLayout l = layout(*header);
  name_offset = reinterpret_cast<const uint64_t*>(p + l.name_offset);
  root = p + l.root;
  names = p + l.names;
  if (sharded()) {
    offset = reinterpret_cast<const uint64_t*>(p + l.offset);
    length = reinterpret_cast<const uint64_t*>(p + l.length);
    shard = reinterpret_cast<const uint32_t*>(p + l.shard);
    shard_name_offset = reinterpret_cast<const uint64_t*>(p + l.shard_name_offset);
    shard_names = p + l.shard_names;
  }
}

bool SharedIndexView::locate(uint32_t i, std::string& scratch, SampleLocation& where) const {
  if (i >= header->count) return false;
  std::string_view rel;
  if (!sharded()) {
    if (!pool_string(names, header->names_size, name_offset[i], rel)) return false;
    join_location(scratch, root_text(), rel);
    where = {scratch, 0, SampleLocation::kWholeFile};
    return true;
  }
  if (shard[i] >= header->shard_count ||
      !pool_string(shard_names, header->shard_names_size, shard_name_offset[shard[i]], rel)) {
    return false;
  }
  join_location(scratch, root_text(), rel);
  where = {scratch, offset[i], length[i]};
  return true;
}

bool SharedIndexView::path(uint32_t i, std::string& out) const {
  SampleLocation where;
  if (!locate(i, out, where)) return false;
  if (sharded()) {
    std::string_view member;
    if (!pool_string(names, header->names_size, name_offset[i], member)) return false;
    out += ':';
    out += member;
  }
  return true;
}

}  // namespace stoker
