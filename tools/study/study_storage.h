// SPDX-License-Identifier: Apache-2.0
// The study's storages made real: packed shards of a dataset (stoker pack, made once per
// study) and NFS exports (a local NFS-Ganesha server per exported directory, started through
// scripts/nfs_serve.sh and stopped with the study, or an existing server given by URL).
// Not a source: the loader reads whatever root this hands back.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace stoker {

// scripts/nfs_serve.sh: $STOKER_NFS_SERVE, else the copy the build puts beside this program
// (tools/CMakeLists.txt), so a moved or copied build does not reach back into a source tree.
std::string nfs_serve_script();

class NfsExports {
 public:
  // existing_url: an export of a server someone else runs (--nfs); empty: start our own.
  // state_dir: where our servers keep their config, logs and pids.
  NfsExports(std::string existing_url, std::string state_dir);
  ~NfsExports();
  NfsExports(const NfsExports&) = delete;
  NfsExports& operator=(const NfsExports&) = delete;

  // The nfs:// URL that serves local directory `dir`: with an existing server,
  // <its export>/<name>; otherwise a server of ours exporting `dir` (started on first use).
  // stoker::Error with the reason when no server can run here (and again for later asks).
  // `link`: "" a server on 127.0.0.1; else one in a network namespace of its own behind a
  // veth pair shaped to `link` (scripts/nfs_serve.sh --netns --link: unshaped, 10gbit, ...),
  // a server per (dir, link).
  std::string url_of(const std::string& dir, const std::string& name, const std::string& link = "");
  // A --netns server's measured link (its link.json: rtt_ms, mbit_per_s, ...); null for
  // others or when it is not ours.
  nlohmann::json link_of(const std::string& dir, const std::string& link) const;
  // The CPU seconds so far of our server for (dir, link) (its process: pid_cpu_seconds); -1
  // when none of ours serves it, 0 when its process cannot be read.
  double server_cpu_seconds(const std::string& dir, const std::string& link) const;
  // Stops every server started here (the destructor does too).
  void stop_all();
  size_t running() const { return started_.size(); }

 private:
  std::string existing_, state_dir_;
  // Keyed by dir, or dir + "@" + link for a --netns server.
  std::map<std::string, std::string> started_;  // key -> its server's state dir
  std::map<std::string, std::string> urls_;     // key -> URL
  std::map<std::string, std::string> failed_;   // key -> why it could not start
};

// `dataset` packed into tar shards under `dir` (created; replaced if it holds other shards),
// 64 MB each. Returns `dir`.
std::string pack_study_shards(const std::string& dataset, const std::string& dir);

}  // namespace stoker
