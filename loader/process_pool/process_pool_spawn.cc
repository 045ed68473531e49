// SPDX-License-Identifier: Apache-2.0
#include "loader/process_pool/process_pool_spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/clock.h"
#include "common/error.h"
#include "loader/process_pool/worker_protocol.h"

extern char** environ;

namespace stoker {

namespace {

// A CLOEXEC copy of fd numbered above the workers' fixed numbers, so that no dup2 in the
// child overwrites a descriptor a later dup2 still needs.
int above_fixed_fds(int fd) {
  const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  if (copy < 0) fail("cannot duplicate a descriptor for a worker: {}", errno_text(errno));
  return copy;
}

}  // namespace

std::string find_worker_binary() {
  if (const char* env = std::getenv("STOKER_WORKER"); env && *env) {
    if (access(env, X_OK) == 0) return env;
    fail("STOKER_WORKER={} is not an executable file: {}", env, errno_text(errno));
  }
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string beside = (self.parent_path() / "stoker-worker").string();
  if (!ec && access(beside.c_str(), X_OK) == 0) return beside;
  const std::string built = STOKER_WORKER_BUILD_PATH;
  if (access(built.c_str(), X_OK) == 0) return built;
  fail(
      "processes:N needs the stoker-worker executable and found none: looked at $STOKER_WORKER "
      "(unset), {} (beside this program) and {} (where it was built); set STOKER_WORKER to "
      "its path",
      beside, built);
}

WorkerProcess spawn_worker(const std::string& exe, int index_fd, int batch_fd,
                           const WorkerSetup& setup) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    fail("cannot create a socket pair for a worker: {}", errno_text(errno));
  }
  const int src[3] = {above_fixed_fds(sv[1]), above_fixed_fds(index_fd), above_fixed_fds(batch_fd)};
  close(sv[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, src[0], kWorkerSocketFd);
  posix_spawn_file_actions_adddup2(&actions, src[1], kWorkerIndexFd);
  posix_spawn_file_actions_adddup2(&actions, src[2], kWorkerBatchFd);
  // Nothing else: a worker holding a copy of some pipe's end could delay its reader's EOF.
  posix_spawn_file_actions_addclosefrom_np(&actions, kWorkerBatchFd + 1);
  // A worker starts with no signal blocked and default dispositions, whatever this
  // thread's mask and the application's handlers are.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGTERM, SIGPIPE, SIGCHLD, SIGHUP}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::string path = exe, parent = std::to_string(getpid());
  char* argv[] = {path.data(), parent.data(), nullptr};
  WorkerProcess w;
  const int rc = posix_spawn(&w.pid, exe.c_str(), &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  for (int fd : src) close(fd);
  if (rc != 0) {
    close(sv[0]);
    fail("cannot start the worker {}: {}", exe, errno_text(rc));
  }
  w.socket = sv[0];
  send_packet(w.socket, &setup, sizeof setup);  // a worker already gone shows in await_ready
  return w;
}

void await_ready(WorkerProcess& w, const std::string& exe, int timeout_ms) {
  const pid_t pid = w.pid;
  const int64_t deadline = now_ns() + int64_t{timeout_ms} * 1'000'000;
  pollfd p{w.socket, POLLIN, 0};
  int rc = 0;
  while ((rc = poll(&p, 1,
                    static_cast<int>(std::max<int64_t>(0, (deadline - now_ns()) / 1'000'000)))) <
             0 &&
         errno == EINTR) {
  }
  if (rc == 0) {
    kill(pid, SIGKILL);
    end_worker(w, 1000);
    fail("the worker {} (pid {}) did not finish start-up within {} s; killed it", exe, pid,
         timeout_ms / 1000);
  }
  WorkerReady ready;
  const ssize_t n = recv_packet(w.socket, &ready, sizeof ready, true);
  if (n == 0) {
    fail(
        "the worker {} (pid {}) exited during start-up ({}); its own message, if any, is on "
        "stderr",
        exe, pid, describe_exit(end_worker(w, 5000)));
  }
  if (n != sizeof ready || ready.protocol != kWorkerProtocol ||
      ready.setup_size != sizeof(WorkerSetup)) {
    end_worker(w, 1000);
    fail(
        "the worker {} is from another build of stoker (its start-up answer does not match); "
        "point STOKER_WORKER at the stoker-worker built with this program",
        exe);
  }
}

int end_worker(WorkerProcess& w, int grace_ms) {
  if (w.socket >= 0) close(w.socket);
  w.socket = -1;
  if (w.pid <= 0) return -1;
  const pid_t pid = w.pid;
  w.pid = -1;
  int status = 0;
  const int64_t deadline = now_ns() + int64_t{grace_ms} * 1'000'000;
  while (true) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return -1;  // ECHILD: the application reaps its children
    if (now_ns() >= deadline) break;
    usleep(1000);
  }
  kill(pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return status;
}

std::string describe_exit(int status) {
  if (status == -1) return "exit status unknown";
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigdescr_np(sig);
    return fmt::format("signal {} {}", sig, name ? name : "");
  }
  return fmt::format("exit status {}", WEXITSTATUS(status));
}

}  // namespace stoker
