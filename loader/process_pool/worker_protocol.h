// SPDX-License-Identifier: Apache-2.0
// What the processes:N parent and its stoker-worker processes say to each other: fixed-size
// messages, one per SOCK_SEQPACKET packet, and the layout of the shared index. Both ends come
// from one build; the start-up handshake checks the protocol number and struct size. Pixels
// never travel here: a worker writes them straight into the shared batch memory.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "augment/collate.h"
#include "augment/crop.h"
#include "augment/decoder.h"
#include "loader/batch.h"
#include "loader/sources/source.h"

namespace stoker {

struct Index;

// Descriptors a worker finds open at start (posix_spawn dup2s them to these numbers).
inline constexpr int kWorkerSocketFd = 3;
inline constexpr int kWorkerIndexFd = 4;  // the shared index, sealed read-only
inline constexpr int kWorkerBatchFd = 5;  // the batch tensors, read-write

inline constexpr uint32_t kWorkerProtocol = 0x53544b04;  // "STK", version 4 (wire source)

// SourceOptions as they travel in WorkerSetup: fixed size, the null file's path inline.
struct WireSourceOptions {
  SourceOptions::Kind kind = SourceOptions::Kind::automatic;
  bool direct = false;
  bool evict_after_read = false;
  char null_file[256] = {};  // NUL-terminated; only the null source reads it
};
// The null file's path travels only with the null source, which reads it; a path longer than
// the wire's 255 bytes is a stoker::Error naming it (never cut short into another path).
WireSourceOptions to_wire(const SourceOptions& options);
SourceOptions from_wire(const WireSourceOptions& wire);

// Parent -> worker, the first message: what attempt_sample reads from the LoaderConfig.
struct WorkerSetup {
  uint32_t protocol = kWorkerProtocol;
  uint32_t size = sizeof(WorkerSetup);
  TransformConfig transform;
  OutputSpec output;  // the LoaderContext's normaliser spec (the pool's largest width/height)
  DecodeOptions decode;
  uint64_t seed = 0;
  bool no_decode = false;
  WireSourceOptions source;  // the worker makes its own source from these and the shared index
};

// Worker -> parent, once set up: it is ready for requests.
struct WorkerReady {
  uint32_t protocol = kWorkerProtocol;
  uint32_t setup_size = sizeof(WorkerSetup);
};

// Parent -> worker: one attempt at one sample. A worker answers requests in order.
struct SampleRequest {
  uint64_t tag = 0;  // the parent's job, echoed in the reply
  uint64_t epoch = 0;
  uint64_t offset = 0;            // byte offset of the sample's slot in the batch memory
  uint32_t index = 0;             // dataset index
  uint32_t attempt = 0;           // the slot's candidate number: keys the random crop
  int32_t width = 0, height = 0;  // the batch's output size (a size schedule changes it)
};

enum class SampleStatus : uint32_t {
  ok,
  bad_input,  // a stoker::Error: the on-error policy applies
  internal,   // any other exception: the run stops, as with threads:N
};

// Worker -> parent. Only the first wire_size() bytes are sent.
struct SampleReply {
  uint64_t tag = 0;
  uint64_t hash = 0;    // of the bytes written to the slot (of the file with no_decode)
  SampleTiming timing;  // this attempt's stages; `attempts` is the parent's business
  SampleStatus status = SampleStatus::ok;
  uint32_t reason_size = 0;
  char reason[2048];  // the error message, truncated

  void set_reason(const std::string& text);
  size_t wire_size() const { return offsetof(SampleReply, reason) + reason_size; }
};

// One packet; false when the peer has gone. Never raises SIGPIPE; retries EINTR.
bool send_packet(int fd, const void* data, size_t size);
// One packet into buf: its size; 0 when the peer has gone; -1 if `wait` is false and
// nothing is pending. Throws stoker::Error on any other socket error.
ssize_t recv_packet(int fd, void* buf, size_t capacity, bool wait);

// The index as workers see it, in one memfd written once by the parent (each part 8-aligned):
//   SharedIndexHeader | name_offset[count] (u64) | root | names pool (NUL-terminated paths)
//   | packed shards only: offset[count] (u64) | length[count] (u64) | shard[count] (u32)
//   | shard_name_offset[shard_count] (u64) | shard names pool (NUL-terminated)
// Workers map it read-only and read paths in place: their heap does not grow with it.
struct SharedIndexHeader {
  uint64_t magic = 0;
  uint64_t count = 0, root_size = 0, names_size = 0;
  uint64_t shard_count = 0, shard_names_size = 0;  // 0, 0: whole files
};
size_t shared_index_bytes(const Index& index);
void write_shared_index(const Index& index, void* dst);

struct SharedIndexView {
  const SharedIndexHeader* header = nullptr;
  const uint64_t* name_offset = nullptr;        // [count]
  const char* root = nullptr;                   // [root_size], not NUL-terminated
  const char* names = nullptr;                  // [names_size]
  const uint64_t* offset = nullptr;             // [count], packed shards only
  const uint64_t* length = nullptr;             // [count], packed shards only
  const uint32_t* shard = nullptr;              // [count], packed shards only
  const uint64_t* shard_name_offset = nullptr;  // [shard_count]
  const char* shard_names = nullptr;            // [shard_names_size]

  // `data` is a mapping of `size` bytes made by write_shared_index; throws if it is not.
  SharedIndexView(const void* data, size_t size);
  std::string_view root_text() const { return {root, header->root_size}; }
  bool sharded() const { return header->shard_count > 0; }
  // Where sample i's bytes are, as locate_sample() says for the Index (same join_location);
  // the file name is kept in `scratch`. False if i or the index is out of range.
  bool locate(uint32_t i, std::string& scratch, SampleLocation& where) const;
  // The sample's name in messages, as Index::path. False if out of range.
  bool path(uint32_t i, std::string& out) const;
};

}  // namespace stoker
