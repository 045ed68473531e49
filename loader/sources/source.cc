// SPDX-License-Identifier: Apache-2.0
// The source layer's shared parts: the read buffer, kind names, and the factory that picks a
// source for a dataset. The sources themselves live in source_<kind>.cc.
#include "loader/sources/source.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "common/error.h"

namespace stoker {

ReadBuffer::~ReadBuffer() {
  std::free(data_);
}

ReadBuffer::ReadBuffer(ReadBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), capacity_(std::exchange(o.capacity_, 0)) {}

ReadBuffer& ReadBuffer::operator=(ReadBuffer&& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(capacity_, o.capacity_);
  return *this;
}

void ReadBuffer::reserve(size_t bytes) {
  if (bytes <= capacity_) return;
  std::free(data_);
  data_ = nullptr;
  capacity_ = 0;
  // Rounded up generously: file sizes vary a little, and each growth is a new allocation.
  const size_t cap = (bytes + 65535) / 65536 * 65536;
  data_ = static_cast<uint8_t*>(std::aligned_alloc(kAlign, cap));
  if (!data_) fail("cannot allocate a {}-byte read buffer", cap);
  capacity_ = cap;
}

namespace {

constexpr std::pair<SourceOptions::Kind, const char*> kKinds[] = {
    {SourceOptions::Kind::automatic, "auto"}, {SourceOptions::Kind::pread, "pread"},
    {SourceOptions::Kind::uring, "uring"},    {SourceOptions::Kind::null, "null"},
    {SourceOptions::Kind::nfs, "nfs"},        {SourceOptions::Kind::shards, "shards"},
};

bool is_url(const std::string& root) {
  return root.rfind("nfs://", 0) == 0;
}

}  // namespace

const char* source_kind_name(SourceOptions::Kind k) {
  for (const auto& [kind, name] : kKinds) {
    if (kind == k) return name;
  }
  return "?";
}

SourceOptions::Kind parse_source_kind(const std::string& text) {
  for (const auto& [kind, name] : kKinds) {
    if (text == name) return kind;
  }
  if (text == "shard") return SourceOptions::Kind::shards;  // the older name, deprecated
  fail("unknown source '{}': expected auto, pread, uring, null, nfs or shards", text);
}

size_t Source::queue_depth() const {
  fail("the {} source reads synchronously only (no reads in flight)", name());
}

void Source::submit(const ReadRequest&) {
  fail("the {} source reads synchronously only (no submit/reap); use a reader that calls read()",
       name());
}

size_t Source::reap(std::vector<ReadCompletion>&, size_t, int) {
  fail("the {} source reads synchronously only (no submit/reap)", name());
}

std::unique_ptr<Source> make_source(const SourceSpec& spec) {
  using K = SourceOptions::Kind;
  const K kind = spec.options.kind;
  const bool url = is_url(spec.root);
  if (kind == K::null) return make_null_source(spec.options, spec.queue_depth);
  if (kind == K::nfs || (kind == K::automatic && url)) return make_nfs_source(spec);
  // A reader that submits reads gets io_uring for local files and shard byte ranges alike.
  const bool async = kind == K::uring || (kind == K::automatic && spec.queue_depth > 0);
  if (kind == K::shards || (kind == K::automatic && spec.sharded && !async))
    return make_shards_source(spec);
  if (url) {
    fail("dataset '{}' is on NFS: the {} source reads local files only (use --source nfs or auto)",
         spec.root, source_kind_name(kind));
  }
  if (async) return make_uring_source(spec.options, spec.queue_depth);
  return make_pread_source(spec.options);
}

}  // namespace stoker
