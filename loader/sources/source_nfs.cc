// SPDX-License-Identifier: Apache-2.0
// The NFS source: samples at nfs:// URLs read through libnfs (NfsClient), synchronously for
// serial/threads/processes and with up to queue_depth requests in flight through
// submit/reap for the asynchronous reader. Each instance (one per thread or process, by
// clone()) has its own libnfs context and TCP connection, made on first use. A file that
// is missing or unreadable is that request's error; a server that stops answering or
// drops the connection throws, naming the URL, within the client's timeout.
#include "common/error.h"
#include "loader/sources/nfs_client.h"
#include "loader/sources/source.h"

namespace stoker {

namespace {

constexpr uint32_t kDefaultDepth = 32;

uint8_t* reserve_in(void* self, size_t bytes) {
  auto* b = static_cast<ReadBuffer*>(self);
  b->reserve(bytes);
  return b->data();
}

class NfsSource final : public Source {
 public:
  explicit NfsSource(const SourceSpec& spec)
      : spec_(spec),
        root_(parse_nfs_url(spec.root)),
        depth_(spec.queue_depth ? spec.queue_depth : kDefaultDepth) {}

  const char* name() const override { return "nfs"; }
  uint32_t capabilities() const override { return kAsync; }  // depth_ is never 0
  std::unique_ptr<Source> clone() const override { return std::make_unique<NfsSource>(spec_); }

  std::span<const uint8_t> read(const SampleLocation& where, ReadBuffer& buf) override {
    return client().read(request(0, where, buf));
  }

  size_t queue_depth() const override { return depth_; }

  void submit(const ReadRequest& r) override {
    STOKER_CHECK_MSG(client().in_flight() < depth_, "nfs source: more than {} reads submitted",
                     depth_);
    client().submit(request(r.tag, r.where, *r.buffer));
  }

  size_t reap(std::vector<ReadCompletion>& out, size_t max, int timeout_ms) override {
    done_.clear();
    const size_t n = client().reap(done_, max, timeout_ms);
    for (NfsClient::Done& d : done_) out.push_back({d.tag, d.bytes, d.read_ns, std::move(d.error)});
    return n;
  }

 private:
  NfsClient& client() {
    if (!client_) client_ = std::make_unique<NfsClient>(root_);
    return *client_;
  }

  // The request for a sample: its path relative to the dataset's URL, whose server and
  // arguments it shares (join_location made it from that URL).
  NfsClient::Read request(uint64_t tag, const SampleLocation& where, ReadBuffer& buf) {
    const NfsUrl u = parse_nfs_url(where.file);
    const std::string& base = root_.path;
    const bool below = u.server == root_.server && u.path.size() > base.size() &&
                       u.path.compare(0, base.size(), base) == 0 &&
                       (base == "/" || u.path[base.size()] == '/');
    if (!below) {
      fail("{}: not below the dataset's URL {} (one NFS source serves one dataset)", where.file,
           spec_.root);
    }
    NfsClient::Read r;
    r.tag = tag;
    r.path = u.path.substr(base == "/" ? 1 : base.size() + 1);
    r.offset = where.offset;
    r.length = where.whole_file() ? NfsClient::kWholeFile : where.length;
    r.sink = {reserve_in, &buf};
    return r;
  }

  SourceSpec spec_;
  NfsUrl root_;
  uint32_t depth_;
  std::unique_ptr<NfsClient> client_;
  std::vector<NfsClient::Done> done_;
};

}  // namespace

std::unique_ptr<Source> make_nfs_source(const SourceSpec& spec) {
  if (!is_nfs_url(spec.root)) {
    fail("dataset '{}': the nfs source reads nfs:// URLs only (nfs://server/path)", spec.root);
  }
  return std::make_unique<NfsSource>(spec);
}

}  // namespace stoker
