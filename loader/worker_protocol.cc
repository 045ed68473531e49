// SPDX-License-Identifier: Apache-2.0
#include "loader/worker_protocol.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/error.h"
#include "loader/index.h"

namespace stoker {

namespace {

constexpr uint64_t kIndexMagic = 0x53544b494e444558;  // "STKINDEX"

size_t align8(size_t n) {
  return (n + 7) / 8 * 8;
}

}  // namespace

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

size_t shared_index_bytes(const Index& index) {
  return sizeof(SharedIndexHeader) + index.size() * sizeof(uint64_t) + align8(index.root.size()) +
         index.names.size();
}

void write_shared_index(const Index& index, void* dst) {
  SharedIndexHeader h;
  h.magic = kIndexMagic;
  h.count = index.size();
  h.root_size = index.root.size();
  h.names_size = index.names.size();
  char* p = static_cast<char*>(dst);
  std::memcpy(p, &h, sizeof h);
  p += sizeof h;
  std::memcpy(p, index.name_offset.data(), h.count * sizeof(uint64_t));
  p += h.count * sizeof(uint64_t);
  std::memcpy(p, index.root.data(), h.root_size);
  p += align8(h.root_size);
  std::memcpy(p, index.names.data(), h.names_size);
}

SharedIndexView::SharedIndexView(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  header = static_cast<const SharedIndexHeader*>(data);
  if (size < sizeof *header || header->magic != kIndexMagic ||
      size < sizeof *header + header->count * sizeof(uint64_t) + align8(header->root_size) +
                 header->names_size) {
    fail("the shared index ({} bytes) is not one written by this build of stoker", size);
  }
  name_offset = reinterpret_cast<const uint64_t*>(p + sizeof *header);
  root = p + sizeof *header + header->count * sizeof(uint64_t);
  names = root + align8(header->root_size);
}

bool SharedIndexView::path(uint32_t i, std::string& out) const {
  if (i >= header->count || name_offset[i] >= header->names_size) return false;
  const char* name = names + name_offset[i];
  const void* end = std::memchr(name, '\0', header->names_size - name_offset[i]);
  if (!end) return false;
  out.assign(root, header->root_size);
  out += '/';
  out.append(name, static_cast<const char*>(end));
  return true;
}

}  // namespace stoker
