// SPDX-License-Identifier: Apache-2.0
// A local NFS-Ganesha server for tests, through scripts/nfs_serve.sh (free ports, its own
// state directory, stopped by the destructor). Where it cannot run (not root, packages
// missing) tests skip with the reason; as root under CI=true or STOKER_REQUIRE_ORACLES=1, a
// server that does not start (packages missing included) is a failure, never a skip.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "test_util.h"

#ifndef STOKER_NFS_SERVE
#error "STOKER_NFS_SERVE (the path of scripts/nfs_serve.sh) must be defined by the build"
#endif

namespace stoker::test {

class NfsServer {
 public:
  // Exports `dir` read-only. ok() false: see skip_reason() / error().
  explicit NfsServer(const std::string& dir) : state_(state_dir_.path()) {
    std::string out;
    const int rc = run(std::string(STOKER_NFS_SERVE) + " start '" + dir +
                           "' --port auto --mount-port auto --state '" + state_ + "' 2>&1",
                       &out);
    if (rc == 0) {
      url_ = out.substr(out.rfind("nfs://"));
      while (!url_.empty() && (url_.back() == '\n' || url_.back() == ' ')) url_.pop_back();
      running_ = true;
    } else if (rc == 77 && !must_run()) {
      skip_ = out;
    } else {
      error_ = "scripts/nfs_serve.sh start failed (" + std::to_string(rc) + "): " + out;
    }
  }
  ~NfsServer() { stop(); }
  NfsServer(const NfsServer&) = delete;
  NfsServer& operator=(const NfsServer&) = delete;

  bool ok() const { return running_; }
  const std::string& skip_reason() const { return skip_; }
  const std::string& error() const { return error_; }
  // nfs://127.0.0.1/<dir>?nfsport=N&mountport=M
  const std::string& url() const { return url_; }
  // The URL of `rel` below the export.
  std::string url_of(const std::string& rel) const {
    const size_t q = url_.find('?');
    return url_.substr(0, q) + "/" + rel + url_.substr(q);
  }

  void stop() {
    if (!running_) return;
    resume();
    run(std::string(STOKER_NFS_SERVE) + " stop --state '" + state_ + "'");
    running_ = false;
  }
  // SIGSTOP / SIGCONT: a server that hangs without closing its connections.
  void pause() { signal_server(SIGSTOP); }
  void resume() { signal_server(SIGCONT); }

  // Under CI=true or STOKER_REQUIRE_ORACLES=1, as root, the server has to run: a missing
  // NFS-Ganesha (scripts/deps.sh --test installs it) is then a failure too.
  static bool must_run() { return require_oracles() && geteuid() == 0; }

 private:
  void signal_server(int sig) {
    std::ifstream in(state_ + "/ganesha.pid");
    pid_t pid = 0;
    if (in >> pid && pid > 0) kill(pid, sig);
  }

  TempDir state_dir_;
  std::string state_;
  std::string url_, skip_, error_;
  bool running_ = false;
};

// In a test body or SetUp(): skips (with the reason) or fails unless `server` runs.
#define STOKER_REQUIRE_NFS(server)                                                          \
  do {                                                                                      \
    if (!(server).ok()) {                                                                   \
      if (!(server).skip_reason().empty()) STOKER_SKIP_IF_OPTIONAL((server).skip_reason()); \
      FAIL() << (server).error();                                                           \
    }                                                                                       \
  } while (0)

}  // namespace stoker::test
