// SPDX-License-Identifier: Apache-2.0
// Datasets over NFS: an ImageFolder tree through the shared walk (image_folder_walk.h) with a
// DirLister per thread, each its own NfsClient (one libnfs context, one TCP connection);
// READDIRPLUS brings each entry's type and size, so only symbolic links cost a stat. List
// files and packed shards as locally, their files stat-ed in parallel.
#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <mutex>
#include <sstream>

#include "common/error.h"
#include "loader/index/image_folder_walk.h"
#include "loader/index/index_nfs.h"
#include "loader/index/shard_index.h"
#include "loader/sources/nfs_client.h"
#include "loader/sources/source.h"

namespace stoker {

namespace {

using image_folder::DirLister;
using image_folder::Listing;

// Connections kept busy while stat-ing a list file's samples: NFS is latency-bound, so more
// than there are cores.
constexpr int kScanThreads = 16;

// Directories below the client's URL, one NfsClient (one connection) per lister.
class NfsLister final : public DirLister {
 public:
  explicit NfsLister(NfsClient& c) : c_(c) {}
  explicit NfsLister(std::unique_ptr<NfsClient> own) : own_(std::move(own)), c_(*own_) {}
  void list(const std::string& rel, Listing& out) override {
    for (NfsEntry& e : c_.list(rel)) {
      if (e.name[0] == '.') continue;
      if (e.type == NfsEntry::Type::link) {
        try {
          const NfsEntry target = c_.stat(rel.empty() ? e.name : rel + "/" + e.name);
          e.type = target.type;
          e.size = target.size;
        } catch (const Error&) {
          continue;  // dangling: not a sample, as locally
        }
      }
      if (e.type == NfsEntry::Type::dir) {
        out.dirs.push_back(image_folder::push_name(out.pool, e.name.c_str()));
      } else if (e.type == NfsEntry::Type::file && has_image_extension(e.name)) {
        out.files.push_back(image_folder::push_name(out.pool, e.name.c_str()));
        out.file_size.push_back(e.size);
      }
    }
  }
  std::string display(const std::string& rel) const override { return c_.url().join(rel); }

 private:
  std::unique_ptr<NfsClient> own_;
  NfsClient& c_;
};

// Runs f(client, i) for i in [0, n) on kScanThreads threads, each with its own client.
template <class F>
void parallel_over_nfs(const NfsUrl& url, size_t n, F f) {
  tbb::enumerable_thread_specific<std::unique_ptr<NfsClient>> clients;
  std::exception_ptr error;
  std::mutex error_mu;
  tbb::global_control io_threads(tbb::global_control::max_allowed_parallelism,
                                 std::max<size_t>(kScanThreads, tbb::info::default_concurrency()));
  tbb::task_arena arena(kScanThreads);
  arena.execute([&] {
    tbb::parallel_for(size_t{0}, n, [&](size_t i) {
      try {
        auto& c = clients.local();
        if (!c) c = std::make_unique<NfsClient>(url);
        f(*c, i);
      } catch (...) {
        std::lock_guard lock(error_mu);
        if (!error) error = std::current_exception();
      }
    });
  });
  if (error) std::rethrow_exception(error);
}

Index image_folder_over_nfs(NfsClient& c) {
  NfsLister top(c);
  return image_folder::walk_image_folder(c.url().text(), top, [&c] {
    return std::make_unique<NfsLister>(std::make_unique<NfsClient>(c.url()));
  });
}

Index list_file_over_nfs(NfsClient& c) {
  std::vector<uint8_t> bytes;
  NfsClient::Read r;
  r.sink = {[](void* self, size_t n) {
              auto& b = *static_cast<std::vector<uint8_t>*>(self);
              b.resize(n);
              return b.data();
            },
            &bytes};
  const auto text = c.read(r);
  std::istringstream in(std::string(reinterpret_cast<const char*>(text.data()), text.size()));
  NfsUrl dir = c.url();
  const size_t slash = dir.path.rfind('/');
  dir.path = slash == 0 ? "/" : dir.path.substr(0, slash);
  Index index = parse_list_file(in, c.url().text(), dir.text());
  // Missing files are an error here, naming the line: a list is a promise about the tree.
  std::vector<std::string> missing(index.size());
  parallel_over_nfs(dir, index.size(), [&](NfsClient& t, size_t i) {
    try {
      index.bytes[i] = t.stat(index.relative_path(i)).size;
    } catch (const Error& e) {
      missing[i] = e.what();
    }
  });
  for (size_t i = 0; i < index.size(); ++i) {
    if (!missing[i].empty()) fail("list file '{}': sample {}: {}", c.url().text(), i, missing[i]);
  }
  return index;
}

std::string read_all(NfsClient& c, const std::string& path) {
  std::vector<uint8_t> bytes;
  NfsClient::Read r;
  r.path = path;
  r.sink = {[](void* self, size_t n) {
              auto& b = *static_cast<std::vector<uint8_t>*>(self);
              b.resize(n);
              return b.data();
            },
            &bytes};
  const auto got = c.read(r);
  return {reinterpret_cast<const char*>(got.data()), got.size()};
}

// Packed shards (`stoker pack`): the index file read over NFS, each shard's size checked
// with a stat, as index_shards does locally. `index_path` is relative to the client's URL.
Index shards_over_nfs(NfsClient& c, const std::string& index_path, const NfsUrl& dir) {
  const std::string name = index_path.empty() ? c.url().text() : c.url().join(index_path);
  std::istringstream in(read_all(c, index_path));
  ShardIndexFile f = parse_shard_index(in, name);
  NfsClient d(dir);
  return index_from_shard_file(std::move(f), dir.text(), name,
                               [&](const std::string& file) { return d.stat(file).size; });
}

}  // namespace

Index index_nfs(const std::string& url_text) {
  NfsClient c(parse_nfs_url(url_text));
  const NfsEntry root = c.stat("");
  if (root.type == NfsEntry::Type::dir) {
    // A folder holding a shard index is packed shards, as locally.
    bool packed = false;
    try {
      packed = c.stat(kShardIndexName).type == NfsEntry::Type::file;
    } catch (const SourceBroken&) {
      throw;
    } catch (const Error&) {
    }
    if (packed) return shards_over_nfs(c, kShardIndexName, c.url());
    return image_folder_over_nfs(c);
  }
  const std::string name = c.url().path.substr(c.url().path.rfind('/') + 1);
  if (name == kShardIndexName) {
    NfsUrl dir = c.url();
    dir.path = dir.path.substr(0, std::max<size_t>(dir.path.rfind('/'), 1));
    return shards_over_nfs(c, "", dir);
  }
  return list_file_over_nfs(c);
}

}  // namespace stoker
